//! jq filters over tool results (`CallMcpWithQuery`), on the `jaq` crates.
//!
//! A filter runs in memory, on its own thread, with no file, input or
//! environment access, inside a budget of steps, time, stack and value
//! size, on bounded input, and with bounded output (see [`sandbox`] for how
//! the budget is enforced inside jaq). A syntax or name error reports the
//! byte offset, line and column in the filter.

mod convert;
mod sandbox;

use std::time::{Duration, Instant};

use jaq_core::load::lex::{Lexer, Token};
use jaq_core::load::parse::{Def, Parser};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use sandbox::{Budget, Data, Trip};

/// Name of the definition that holds the user's filter.
const MAIN: &str = "__extpool_main";
/// Stack of the evaluation thread; the budget trips well before it is used up.
const THREAD_STACK: usize = 256 << 20;
/// Stack the evaluation may use before the budget trips.
const MAX_STACK: usize = 160 << 20;

/// Bounds of one jq evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Largest string (bytes) or container (elements) the filter may build.
    pub max_value_bytes: usize,
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
        }
    }
}

/// Where in the filter an error is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The filter tried to build a value larger than allowed.
    #[error("jq filter tried to build a value larger than {limit} bytes or elements")]
    ValueTooLarge {
        /// The limit.
        limit: usize,
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
    let prelude = sandbox::prelude().chain(std::iter::once(main));
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
        .with_funs(sandbox::natives())
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

    let budget = Budget::new(
        limits.max_steps,
        Instant::now() + Duration::from_millis(limits.timeout_ms),
        MAX_STACK,
        limits.max_value_bytes,
    );
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
                        message: match e.into_val() {
                            jaq_json::Val::TStr(b) | jaq_json::Val::BStr(b) => {
                                String::from_utf8_lossy(&b).into_owned()
                            }
                            other => other.to_string(),
                        },
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
        tracing::debug!(steps = budget.steps(), ?trip, "jq budget exhausted");
        return Err(match trip {
            Trip::Steps => JqError::StepLimit {
                steps: limits.max_steps,
            },
            Trip::Time => JqError::Timeout {
                timeout_ms: limits.timeout_ms,
            },
            Trip::Stack => JqError::TooDeep,
            Trip::Value => JqError::ValueTooLarge {
                limit: limits.max_value_bytes,
            },
        });
    }
    match error {
        Some(e) => Err(e),
        None => Ok(out.into_values()),
    }
}

#[cfg(test)]
mod tests;
