use serde_json::json;

use super::*;

fn jq(filter: &str, input: Value) -> Result<Vec<Value>, JqError> {
    evaluate(filter, &input, &JqLimits::default())
}

#[test]
fn selects_fields() {
    let input = json!({"items": [{"id": 1, "name": "a", "x": 0}, {"id": 2, "name": "b"}]});
    let out = jq("[.items[] | {id, name}]", input.clone()).unwrap();
    assert_eq!(
        out,
        vec![json!([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])]
    );
    let out = jq(".items[].id", input).unwrap();
    assert_eq!(out, vec![json!(1), json!(2)]);
}

#[test]
fn the_standard_library_works() {
    let input = json!([3, 1, 2, 2]);
    assert_eq!(
        jq("sort | unique", input.clone()).unwrap(),
        vec![json!([1, 2, 3])]
    );
    assert_eq!(
        jq("map(. * 2) | add", input.clone()).unwrap(),
        vec![json!(16)]
    );
    assert_eq!(
        jq("[range(3)]", Value::Null).unwrap(),
        vec![json!([0, 1, 2])]
    );
    assert_eq!(
        jq("[limit(3; repeat(1))]", Value::Null).unwrap(),
        vec![json!([1, 1, 1])]
    );
    assert_eq!(
        jq(
            "to_entries | map(select(.value > 1)) | from_entries",
            json!({"a": 1, "b": 2})
        )
        .unwrap(),
        vec![json!({"b": 2})]
    );
    assert_eq!(
        jq(r#""a-b" | split("-") | join("+")"#, Value::Null).unwrap(),
        vec![json!("a+b")]
    );
    assert_eq!(
        jq(".a += 1 | .b *= 3", json!({"a": 1, "b": 2})).unwrap(),
        vec![json!({"a": 2, "b": 6})]
    );
    assert_eq!(
        jq("[paths]", json!({"a": [1]})).unwrap(),
        vec![json!([["a"], ["a", 0]])]
    );
    assert_eq!(
        jq("del(.[] | select(. == 2))", input).unwrap(),
        vec![json!([3, 1])]
    );
    assert_eq!(
        jq(r#"[.[] | tostring] | @json"#, json!([1])).unwrap(),
        vec![json!("[\"1\"]")]
    );
    assert_eq!(
        jq("def f(x): x * 2; f(.)", json!(4)).unwrap(),
        vec![json!(8)]
    );
    assert_eq!(
        jq(r#""ab" * 3"#, Value::Null).unwrap(),
        vec![json!("ababab")]
    );
}

#[test]
fn syntax_errors_name_the_position() {
    let err = jq(".a | | .b", json!({})).unwrap_err();
    assert!(err.is_filter_error(), "{err:?}");
    let pos = err.position().unwrap();
    assert_eq!((pos.offset, pos.line, pos.column), (5, 1, 6), "{err}");
    assert!(err.to_string().contains("column 6"), "{err}");

    let err = jq(".a |\n  {b: }", json!({})).unwrap_err();
    assert_eq!(err.position().unwrap().line, 2, "{err}");

    let err = jq("[1, 2", json!({})).unwrap_err();
    assert!(matches!(err, JqError::Syntax { .. }), "{err:?}");
}

#[test]
fn undefined_names_name_the_position() {
    let err = jq(".a | nosuchfn", json!({})).unwrap_err();
    match &err {
        JqError::Undefined { name, position, .. } => {
            assert_eq!(name, "nosuchfn");
            assert_eq!(position.offset, 5);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn runtime_errors_are_reported() {
    let err = jq(".a.b", json!({"a": 1})).unwrap_err();
    assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
    let err = jq(r#"error("boom")"#, json!(null)).unwrap_err();
    assert_eq!(
        err,
        JqError::Runtime {
            message: "boom".into()
        }
    );
}

#[test]
fn environment_input_and_files_are_unreachable() {
    for filter in [
        "env",
        "$ENV",
        "$ENV.HOME",
        "env.PATH",
        "input",
        "inputs",
        "[inputs]",
        "now",
        "input_filename",
        "halt",
        "debug",
        "stderr",
        "localtime",
    ] {
        let err = jq(filter, json!(null)).unwrap_err();
        assert!(
            matches!(err, JqError::Undefined { .. }),
            "{filter}: {err:?}"
        );
    }
    for filter in [
        r#"import "x" as x; ."#,
        r#"include "x"; ."#,
        r#"import "/etc/passwd" as $d; $d"#,
    ] {
        let err = jq(filter, json!(null)).unwrap_err();
        assert!(err.is_filter_error(), "{filter}: {err:?}");
    }
}

#[test]
fn endless_filters_are_stopped_by_the_step_budget() {
    for filter in [
        "def f: f; f",
        "def f: 1 + f; f",
        "last(repeat(1))",
        "[repeat(1)]",
        "[range(1e18)] | length",
        "reduce range(1e18) as $x (0; .)",
        "until(false; .)",
        "[.[] as $a | .[] as $b | .[] as $c | .[] as $d | 1] | length",
        "try (def f: f; f) catch 1",
        "0 | [recurse(. + 1)] | length",
    ] {
        let input = json!((0..60).collect::<Vec<_>>());
        let err = jq(filter, input).unwrap_err();
        assert!(err.is_budget_exceeded(), "{filter}: {err:?}");
    }
}

#[test]
fn the_time_budget_stops_a_loop() {
    let limits = JqLimits {
        max_steps: u64::MAX,
        timeout_ms: 50,
        ..JqLimits::default()
    };
    let err = evaluate("def f: f; f", &Value::Null, &limits).unwrap_err();
    assert_eq!(err, JqError::Timeout { timeout_ms: 50 });
}

#[test]
fn deep_recursion_is_stopped_without_overflowing_the_stack() {
    let limits = JqLimits {
        max_steps: u64::MAX,
        timeout_ms: 60_000,
        ..JqLimits::default()
    };
    let err = evaluate("def f: [f]; f", &Value::Null, &limits).unwrap_err();
    assert!(
        matches!(err, JqError::TooDeep | JqError::Timeout { .. }),
        "{err:?}"
    );
}

#[test]
fn memory_bombs_are_refused() {
    for filter in [
        r#""x" * 1e12"#,
        r#""x" * 100000000"#,
        r#"reduce range(64) as $i ("x"; . + .)"#,
        r#"reduce range(64) as $i (2; . * .)"#,
        r#"[limit(40; repeat(.))] | reduce .[] as $x ("ab"; . + .)"#,
        r#".a += "x" * 1e12"#,
    ] {
        let err = jq(filter, json!({"a": "b"})).unwrap_err();
        assert!(
            matches!(
                err,
                JqError::ValueTooLarge { .. } | JqError::StepLimit { .. }
            ),
            "{filter}: {err:?}"
        );
    }
}

#[test]
fn input_and_output_are_bounded() {
    let limits = JqLimits {
        max_input_bytes: 100,
        max_output_bytes: 50,
        ..JqLimits::default()
    };
    let big = json!("x".repeat(200));
    assert!(matches!(
        evaluate(".", &big, &limits).unwrap_err(),
        JqError::InputTooLarge { .. }
    ));
    let err = evaluate(r#""y" * 80"#, &Value::Null, &limits).unwrap_err();
    assert_eq!(err, JqError::OutputTooLarge { limit: 50 });
    let err = evaluate("range(100)", &Value::Null, &limits).unwrap_err();
    assert_eq!(err, JqError::OutputTooLarge { limit: 50 });
    let long = ".".repeat(limits.max_filter_bytes + 1);
    assert!(matches!(
        evaluate(&long, &Value::Null, &limits).unwrap_err(),
        JqError::FilterTooLong { .. }
    ));
}

#[test]
fn deep_outputs_are_refused() {
    let err = jq("reduce range(200) as $i (0; [.])", Value::Null).unwrap_err();
    assert_eq!(err, JqError::OutputTooDeep { limit: 127 });
    // As deep as the output can be read back, and not one level more.
    let max = extpool_core::json::MAX_DEPTH;
    let out = jq(
        &format!("reduce range({}) as $i (0; [.])", max),
        Value::Null,
    )
    .unwrap();
    assert!(serde_json::from_str::<Value>(&serde_json::to_string(&out[0]).unwrap()).is_ok());
    let err = jq(
        &format!("reduce range({}) as $i (0; [.])", max + 1),
        Value::Null,
    )
    .unwrap_err();
    assert_eq!(err, JqError::OutputTooDeep { limit: max });
}

#[tokio::test]
async fn async_evaluation() {
    let out = evaluate_async(".a", &json!({"a": [1]}), &JqLimits::default())
        .await
        .unwrap();
    assert_eq!(out, vec![json!([1])]);
}

#[test]
fn fromjson_is_bounded() {
    assert_eq!(
        jq(r#""{\"a\":[1,\"]\"]}" | fromjson"#, Value::Null).unwrap(),
        vec![json!({"a": [1, "]"]})]
    );
    let err = jq(r#""[" * 1000000 | fromjson"#, Value::Null).unwrap_err();
    assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
    let err = jq(r#""nope" | fromjson"#, Value::Null).unwrap_err();
    assert!(matches!(err, JqError::Runtime { .. }), "{err:?}");
}

#[test]
fn deep_inputs_are_refused_before_serializing() {
    let mut v = json!(0);
    for _ in 0..600 {
        v = json!([v]);
    }
    assert_eq!(
        jq(".", v).unwrap_err(),
        JqError::InputTooDeep { limit: 512 }
    );
}
