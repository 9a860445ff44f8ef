//! jq filters over tool results (`CallMcpWithQuery`), on the `jaq` crates.
//!
//! A filter runs in memory, on its own thread, with no file, input or
//! environment access, inside a budget of steps, time, stack, work, value
//! size and total size built, on bounded input, and with bounded output
//! (see [`sandbox`] for how the budget is enforced inside jaq). A syntax or
//! name error reports the byte offset, line and column in the filter.

mod convert;
pub(crate) mod input;
mod sandbox;

use std::time::{Duration, Instant};

use jaq_core::load::lex::{Lexer, Token};
use jaq_core::load::parse::{Def, Parser};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use sandbox::{Bounds, Budget, Data, Trip};

/// Name of the definition that holds the user's filter.
const MAIN: &str = "__extpool_main";
/// Stack of the evaluation thread; the budget trips well before it is used up.
const THREAD_STACK: usize = 256 << 20;
/// Stack the evaluation may use before the budget trips.
const MAX_STACK: usize = 160 << 20;

/// Bounds of one jq evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct JqLimits {
    /// Longest filter, in bytes.
    pub max_filter_bytes: usize,
    /// Largest input (the tool result as JSON), in bytes.
    pub max_input_bytes: usize,
    /// Largest output (all results as JSON), in bytes.
    pub max_output_bytes: usize,
    /// Evaluation steps (definition calls, iterations, `+`/`*`) before the filter is stopped.
    pub max_steps: u64,
    /// Wall-clock time before the filter is stopped, in milliseconds.
    pub timeout_ms: u64,
    /// Largest value the filter may build or walk, in bytes of memory, with
    /// shared parts counted as copies (never less than the input's size).
    pub max_value_bytes: usize,
    /// Bytes of values the filter may build over its whole run (a running
    /// total that never decreases; never less than four times the input).
    pub max_built_bytes: usize,
}

impl Default for JqLimits {
    fn default() -> Self {
        Self {
            max_filter_bytes: 16 * 1024,
            max_input_bytes: 16 << 20,
            max_output_bytes: 100_000,
            max_steps: 200_000,
            timeout_ms: 2_000,
            max_value_bytes: 16 << 20,
            max_built_bytes: 128 << 20,
        }
    }
}

/// Where in the filter an error is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FilterPosition {
    /// Byte offset in the filter.
    pub offset: usize,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl FilterPosition {
    fn at(filter: &str, offset: usize) -> Self {
        let offset = offset.min(filter.len());
        let before = filter.get(..offset).unwrap_or(filter);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Self {
            offset,
            line,
            column,
        }
    }
}

impl std::fmt::Display for FilterPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {} (byte {})",
            self.line, self.column, self.offset
        )
    }
}

/// Why a filter produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JqError {
    /// The filter is longer than allowed.
    #[error("jq filter is {bytes} bytes, more than the limit of {limit}")]
    FilterTooLong {
        /// Its length.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The input nests deeper than allowed.
    #[error("jq input nests deeper than {limit} levels")]
    InputTooDeep {
        /// The limit.
        limit: usize,
    },
    /// The input is larger than allowed.
    #[error("jq input is {bytes} bytes, more than the limit of {limit}")]
    InputTooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The filter does not parse.
    #[error("jq syntax error at {position}: {message}")]
    Syntax {
        /// Where.
        position: FilterPosition,
        /// What was expected and found.
        message: String,
    },
    /// The filter names a filter or variable that does not exist (or is not
    /// available in the sandbox: `env`, `$ENV`, `input`, …).
    #[error("jq filter uses undefined {kind} {name:?} at {position}")]
    Undefined {
        /// Where.
        position: FilterPosition,
        /// The name as written.
        name: String,
        /// "filter", "variable", "label", "module".
        kind: String,
    },
    /// The filter raised an error while running.
    #[error("jq filter failed: {message}")]
    Runtime {
        /// jq's message.
        message: String,
    },
    /// The step budget ran out (a loop, or very large work).
    #[error("jq filter stopped after {steps} steps (the limit); it may loop forever")]
    StepLimit {
        /// The limit.
        steps: u64,
    },
    /// The time budget ran out.
    #[error("jq filter stopped after {timeout_ms} ms (the limit)")]
    Timeout {
        /// The limit.
        timeout_ms: u64,
    },
    /// The filter recursed too deeply.
    #[error("jq filter recursed too deeply")]
    TooDeep,
    /// The filter tried to build or walk a value larger than allowed.
    #[error("jq filter tried to build or walk a value larger than {limit} bytes (the limit)")]
    ValueTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The filter tried to build a value nested deeper than allowed.
    #[error("jq filter tried to build a value nested deeper than {limit} levels")]
    ValueTooDeep {
        /// The limit.
        limit: usize,
    },
    /// The filter built more than allowed in total.
    #[error("jq filter built more than {limit} bytes of values in total (the limit)")]
    BuiltTooMuch {
        /// The limit.
        limit: usize,
    },
    /// Walking and comparing values took more work than allowed.
    #[error(
        "jq filter stopped after {units} units of work (the limit); it walks or compares too much data"
    )]
    WorkLimit {
        /// The limit.
        units: u64,
    },
    /// The output is larger than allowed.
    #[error("jq output exceeds {limit} bytes; select fewer fields")]
    OutputTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The output nests deeper than JSON consumers accept.
    #[error("jq output nests deeper than {limit} levels")]
    OutputTooDeep {
        /// The limit.
        limit: usize,
    },
    /// The evaluator itself failed (a bug in jaq or here); the process is unharmed.
    #[error("jq evaluation failed internally")]
    Internal,
}

impl JqError {
    /// True when the filter text is at fault (syntax or undefined name).
    pub fn is_filter_error(&self) -> bool {
        matches!(self, Self::Syntax { .. } | Self::Undefined { .. })
    }

    /// True when a compute budget (steps, time, depth, value size) stopped the filter.
    pub fn is_budget_exceeded(&self) -> bool {
        matches!(
            self,
            Self::StepLimit { .. }
                | Self::Timeout { .. }
                | Self::TooDeep
                | Self::ValueTooLarge { .. }
                | Self::ValueTooDeep { .. }
                | Self::BuiltTooMuch { .. }
                | Self::WorkLimit { .. }
        )
    }

    /// The position in the filter, when the error has one.
    pub fn position(&self) -> Option<&FilterPosition> {
        match self {
            Self::Syntax { position, .. } | Self::Undefined { position, .. } => Some(position),
            _ => None,
        }
    }
}

/// Byte offset of `part` inside `whole`, when it is a sub-slice of it.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let w = whole.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    (p >= w && p + part.len() <= w + whole.len()).then(|| p - w)
}

/// Runs `filter` on `input` and returns every output. Blocking: the
/// evaluation runs on a dedicated thread with a large stack, and this call
/// waits for it.
pub fn evaluate(filter: &str, input: &Value, limits: &JqLimits) -> Result<Vec<Value>, JqError> {
    let (filter, input) = prepare(filter, input, limits)?;
    let limits = *limits;
    let handle = std::thread::Builder::new()
        .name("extpool-jq".into())
        .stack_size(THREAD_STACK)
        .spawn(move || run_guarded(&filter, &input, &limits))
        .map_err(|e| {
            tracing::error!("cannot start the jq thread: {e}");
            JqError::Internal
        })?;
    handle.join().unwrap_or(Err(JqError::Internal))
}

/// [`evaluate`] for async callers: the thread reports through a channel.
pub async fn evaluate_async(
    filter: &str,
    input: &Value,
    limits: &JqLimits,
) -> Result<Vec<Value>, JqError> {
    let (filter, input) = prepare(filter, input, limits)?;
    let limits = *limits;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("extpool-jq".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let _ = tx.send(run_guarded(&filter, &input, &limits));
        })
        .map_err(|e| {
            tracing::error!("cannot start the jq thread: {e}");
            JqError::Internal
        })?;
    rx.await.unwrap_or(Err(JqError::Internal))
}

/// Checks sizes and serializes the input (the thread owns its copies).
fn prepare(filter: &str, input: &Value, limits: &JqLimits) -> Result<(String, String), JqError> {
    if filter.len() > limits.max_filter_bytes {
        return Err(JqError::FilterTooLong {
            bytes: filter.len(),
            limit: limits.max_filter_bytes,
        });
    }
    if value_depth(input) > sandbox::MAX_JSON_DEPTH {
        return Err(JqError::InputTooDeep {
            limit: sandbox::MAX_JSON_DEPTH,
        });
    }
    let input = serde_json::to_string(input).map_err(|_| JqError::Internal)?;
    if input.len() > limits.max_input_bytes {
        return Err(JqError::InputTooLarge {
            bytes: input.len(),
            limit: limits.max_input_bytes,
        });
    }
    Ok((filter.to_owned(), input))
}

/// Nesting depth of a JSON value, without recursion (so any depth is safe).
fn value_depth(value: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        max = max.max(depth);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, depth + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, depth + 1))),
            _ => {}
        }
    }
    max
}

fn run_guarded(filter: &str, input: &str, limits: &JqLimits) -> Result<Vec<Value>, JqError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(filter, input, limits)))
        .unwrap_or_else(|_| {
            tracing::error!("the jq evaluator panicked");
            Err(JqError::Internal)
        })
}

/// Parses the user's filter as one term (no module directives).
fn parse(filter: &str) -> Result<jaq_core::load::parse::Term<&str>, JqError> {
    let tokens = Lexer::new(filter).lex().map_err(|errs| {
        use jaq_core::load::lex::Expect;
        let Some((expect, found)) = errs.into_iter().next() else {
            return JqError::Syntax {
                position: FilterPosition::at(filter, 0),
                message: "invalid filter".into(),
            };
        };
        // `Expect::as_str` panics on unusual delimiters: describe those here.
        let expected = match &expect {
            Expect::Delim(open) => format!("a delimiter closing {open:?}"),
            other => other.as_str().to_owned(),
        };
        JqError::Syntax {
            position: FilterPosition::at(filter, offset_in(filter, found).unwrap_or(0)),
            message: format!("expected {expected}"),
        }
    })?;
    Parser::new(&tokens).parse(|p| p.term()).map_err(|errs| {
        let Some((expect, found)) = errs.into_iter().next() else {
            return JqError::Syntax {
                position: FilterPosition::at(filter, 0),
                message: "invalid filter".into(),
            };
        };
        let found_str = Token::opt_as_str(found, filter);
        let shown = if found_str.is_empty() {
            "end of filter".to_owned()
        } else {
            format!("{:?}", found_str.chars().take(20).collect::<String>())
        };
        JqError::Syntax {
            position: FilterPosition::at(filter, offset_in(filter, found_str).unwrap_or(0)),
            message: format!("expected {}, found {shown}", expect.as_str()),
        }
    })
}

fn run(filter: &str, input: &str, limits: &JqLimits) -> Result<Vec<Value>, JqError> {
    let term = sandbox::instrument(parse(filter)?);
    let main = Def {
        name: MAIN,
        args: Vec::new(),
        body: term,
    };
    let (natives, checks) = sandbox::natives();
    let prelude = sandbox::prelude(checks).chain(std::iter::once(main));
    let arena = Arena::default();
    let modules = Loader::new(prelude)
        .load(
            &arena,
            File {
                code: MAIN,
                path: (),
            },
        )
        .map_err(|_| JqError::Internal)?;
    let compiled = Compiler::default()
        .with_funs(natives)
        .compile(modules)
        .map_err(|errs| {
            let first = errs.into_iter().flat_map(|(_, e)| e).next();
            match first {
                Some((name, undefined)) => JqError::Undefined {
                    position: FilterPosition::at(filter, offset_in(filter, name).unwrap_or(0)),
                    name: name.to_owned(),
                    kind: undefined.as_str().to_owned(),
                },
                None => JqError::Internal,
            }
        })?;
    let value = jaq_json::read::parse_single(input.as_bytes()).map_err(|e| JqError::Runtime {
        message: format!("input is not JSON: {e}"),
    })?;

    let budget = Budget::new(Bounds {
        max_steps: limits.max_steps,
        deadline: Instant::now() + Duration::from_millis(limits.timeout_ms),
        max_stack: MAX_STACK,
        max_value_bytes: limits.max_value_bytes,
        max_built_bytes: limits.max_built_bytes,
    });
    budget.admit_input(&value);
    let ctx = Ctx::<sandbox::Sandbox>::new(Data::new(&compiled.lut, &budget), Vars::new([]));
    let mut out = convert::Output::new(limits.max_output_bytes);
    let mut error = None;
    for item in compiled.id.run((ctx, value)) {
        match item {
            Ok(v) => {
                if let Err(e) = out.push(&v) {
                    error = Some(e);
                    break;
                }
            }
            Err(exn) => {
                error = Some(match exn.get_err() {
                    Ok(e) => JqError::Runtime {
                        message: runtime_message(e),
                    },
                    Err(_) => JqError::Runtime {
                        message: "halt is not available".into(),
                    },
                });
                break;
            }
        }
    }
    // A tripped budget wins over whatever the filter made of it (`try`).
    if let Some(trip) = budget.tripped() {
        tracing::debug!(
            steps = budget.steps(),
            ?budget,
            ?trip,
            "jq budget exhausted"
        );
        return Err(match trip {
            Trip::Steps => JqError::StepLimit {
                steps: limits.max_steps,
            },
            Trip::Time => JqError::Timeout {
                timeout_ms: limits.timeout_ms,
            },
            Trip::Stack => JqError::TooDeep,
            Trip::Value => JqError::ValueTooLarge {
                limit: budget.cap(),
            },
            Trip::Depth => JqError::ValueTooDeep {
                limit: sandbox::MAX_VALUE_DEPTH,
            },
            Trip::Built => JqError::BuiltTooMuch {
                limit: budget.max_built(),
            },
            Trip::Work => JqError::WorkLimit {
                units: limits.max_steps.saturating_mul(sandbox::WORK_PER_STEP),
            },
        });
    }
    match error {
        Some(e) => Err(e),
        None => Ok(out.into_values()),
    }
}

/// Longest runtime error message kept (the value in it is the filter's data).
const MAX_MESSAGE: usize = 4096;

/// A `fmt::Write` that stops at a limit.
struct Clipped {
    text: String,
    limit: usize,
}

impl std::fmt::Write for Clipped {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.limit {
            let room = self.limit - self.text.len();
            let cut = (0..=room)
                .rev()
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(0);
            self.text.push_str(&s[..cut]);
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// The message of a runtime error, never longer than [`MAX_MESSAGE`]: the
/// value in it is printed only as far as that.
fn runtime_message(e: jaq_core::Error<jaq_json::Val>) -> String {
    use std::fmt::Write as _;
    let mut clipped = Clipped {
        text: String::new(),
        limit: MAX_MESSAGE,
    };
    if write!(clipped, "{e}").is_err() {
        clipped.text.push('…');
        return clipped.text;
    }
    match e.into_val() {
        jaq_json::Val::TStr(b) | jaq_json::Val::BStr(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => clipped.text,
    }
}

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod equivalence_tests;
#[cfg(test)]
mod tests;
