//! jaq's library natives, each behind a definition that checks its input
//! and its output.
//!
//! A native is installed under a private name, and a definition with its
//! public name measures the input (refusing one whose output could pass the
//! value limit, and charging the walk), calls it, and measures and counts
//! what it returns: `def sort: __extpool_input(1; 2) | __extpool_lib_sort
//! | __extpool_output;`. The standard definitions call the public names,
//! so they go through the checks too.

use std::collections::HashMap;
use std::sync::OnceLock;

use jaq_core::Bind;
use jaq_core::load::parse::{Def, Term};

use super::natives::{INPUT, OUTPUT};
use super::{Fun, call, pipe};

/// Natives that reach outside the process: never installed.
pub(super) const WITHHELD: &[&str] = &[
    "env",
    "now",
    "localtime",
    "strflocaltime",
    "halt",
    "debug_empty",
    "stderr_empty",
    "input",
    "inputs",
];

/// Natives the sandbox implements itself (bounded versions).
const REPLACED: &[&str] = &[
    "range",
    "fromjson",
    "tojson",
    "contains",
    "indices",
    "matches",
    "split_matches",
    "split_",
];

/// Natives installed as they are: they walk nothing and build nothing, and
/// path expressions go through them (`first(.a) |= …`).
const AS_IS: &[&str] = &["first", "last", "limit", "skip"];

/// How a native's cost grows with its input.
#[derive(Clone, Copy)]
enum Cost {
    /// It looks at a part only (`length`, `has`).
    Constant = 0,
    /// It walks its input once.
    Linear = 1,
    /// It sorts its input.
    Sorting = 2,
}

/// How much larger than its input a native's output may be, and its cost.
fn shape(name: &str) -> (usize, Cost) {
    match name {
        "sort" | "sort_by" | "group_by" | "min_by_or_empty" | "max_by_or_empty" => {
            (1, Cost::Sorting)
        }
        "length" | "utf8bytelength" | "has" | "startswith" | "endswith" | "bsearch"
        | "error_empty" => (1, Cost::Constant),
        "explode" => (16, Cost::Linear),
        "escape_html" => (6, Cost::Linear),
        "escape_sh" => (4, Cost::Linear),
        "encode_uri" | "key_values" => (3, Cost::Linear),
        "encode_base64" => (2, Cost::Linear),
        "strftime" => (16, Cost::Linear),
        _ => (1, Cost::Linear),
    }
}

/// The private name of a library native (names are leaked once, for the process).
fn private(name: &'static str) -> &'static str {
    static NAMES: OnceLock<parking_lot::Mutex<HashMap<&'static str, &'static str>>> =
        OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock();
    names
        .entry(name)
        .or_insert_with(|| Box::leak(format!("__extpool_lib_{name}").into_boxed_str()))
}

const VARS: [&str; 4] = [
    "$__extpool_a0",
    "$__extpool_a1",
    "$__extpool_a2",
    "$__extpool_a3",
];
const FUNS: [&str; 4] = [
    "__extpool_f0",
    "__extpool_f1",
    "__extpool_f2",
    "__extpool_f3",
];

fn num(n: usize) -> Term<&'static str> {
    // Small literal numbers: "0" to "16".
    const DIGITS: [&str; 17] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
    ];
    Term::Num(DIGITS[n.min(16)])
}

/// `__extpool_input($expand; $cost)`.
fn input_check(expand: usize, cost: Cost) -> Term<&'static str> {
    call(INPUT, vec![num(expand), num(cost as usize)])
}

/// The checking definition of one library native, if it gets one.
fn wrapper(name: &'static str, binds: &[Bind]) -> Option<Def<&'static str>> {
    if AS_IS.contains(&name) || binds.len() > VARS.len() {
        return None;
    }
    let (expand, cost) = shape(name);
    let mut params = Vec::new();
    let mut args = Vec::new();
    for (i, b) in binds.iter().enumerate() {
        match b {
            Bind::Var(()) => {
                params.push(VARS[i]);
                args.push(pipe(Term::Var(VARS[i]), input_check(expand, Cost::Linear)));
            }
            Bind::Fun(()) => {
                params.push(FUNS[i]);
                args.push(call(FUNS[i], Vec::new()));
            }
        }
    }
    let body = pipe(
        input_check(expand, cost),
        pipe(call(private(name), args), call(OUTPUT, Vec::new())),
    );
    Some(Def {
        name,
        args: params,
        body,
    })
}

/// jaq's library natives (without the withheld and replaced ones), under
/// their private names when they get a checking definition, and those
/// definitions.
pub(super) fn natives() -> (Vec<Fun>, Vec<Def<&'static str>>) {
    let mut funs = Vec::new();
    let mut defs = Vec::new();
    let all = jaq_core::funs::<super::Sandbox>()
        .chain(jaq_std::funs::<super::Sandbox>())
        .chain(jaq_json::funs::<super::Sandbox>());
    for (name, binds, native) in all {
        if WITHHELD.contains(&name) || REPLACED.contains(&name) {
            continue;
        }
        match wrapper(name, &binds) {
            Some(def) => {
                defs.push(def);
                funs.push((private(name), binds, native));
            }
            None => funs.push((name, binds, native)),
        }
    }
    (funs, defs)
}
