//! jaq values back to `serde_json`, within the output limits.

use jaq_json::{Num, Val};
use serde_json::{Map, Number, Value};

use super::JqError;

/// Collects outputs and counts their JSON size.
pub(super) struct Output {
    values: Vec<Value>,
    bytes: usize,
    limit: usize,
}

impl Output {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            values: Vec::new(),
            bytes: 0,
            limit,
        }
    }

    /// Converts and keeps one output; fails once the total passes the limit.
    pub(super) fn push(&mut self, v: &Val) -> Result<(), JqError> {
        let mut budget = self.limit.saturating_sub(self.bytes);
        let value = to_json(v, 0, &mut budget, self.limit)?;
        let size = serde_json::to_string(&value).map_or(usize::MAX, |s| s.len());
        self.bytes = self.bytes.saturating_add(size + 1);
        if self.bytes > self.limit + 1 {
            return Err(JqError::OutputTooLarge { limit: self.limit });
        }
        self.values.push(value);
        Ok(())
    }

    pub(super) fn into_values(self) -> Vec<Value> {
        self.values
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn number(n: &Num) -> Value {
    match n {
        Num::Int(i) => Value::Number(Number::from(*i as i64)),
        Num::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        // Big integers and decimals keep their digits when serde_json can
        // hold them, else become the nearest float.
        other => {
            let digits = other.to_string();
            serde_json::from_str::<Number>(&digits)
                .map(Value::Number)
                .or_else(|_| {
                    digits
                        .parse::<f64>()
                        .map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number))
                })
                .unwrap_or(Value::Null)
        }
    }
}

/// Converts with a depth limit and a rough byte budget (so a huge value
/// is refused before it is copied whole).
/// `depth` arrays and objects hold `v`; it may be one more only within
/// [`extpool_core::json::MAX_DEPTH`], as deep as any reader of the output
/// can read.
fn to_json(v: &Val, depth: usize, budget: &mut usize, limit: usize) -> Result<Value, JqError> {
    if matches!(v, Val::Arr(_) | Val::Obj(_)) && extpool_core::json::too_deep(depth + 1) {
        return Err(JqError::OutputTooDeep {
            limit: extpool_core::json::MAX_DEPTH,
        });
    }
    let mut spend = |n: usize| -> Result<(), JqError> {
        if n > *budget {
            return Err(JqError::OutputTooLarge { limit });
        }
        *budget -= n;
        Ok(())
    };
    Ok(match v {
        Val::Null => {
            spend(4)?;
            Value::Null
        }
        Val::Bool(b) => {
            spend(4)?;
            Value::Bool(*b)
        }
        Val::Num(n) => {
            spend(1)?;
            number(n)
        }
        Val::TStr(b) | Val::BStr(b) => {
            spend(b.len() + 2)?;
            Value::String(text(b))
        }
        Val::Arr(a) => {
            spend(2)?;
            let mut out = Vec::with_capacity(a.len().min(1024));
            for x in a.iter() {
                out.push(to_json(x, depth + 1, budget, limit)?);
            }
            Value::Array(out)
        }
        Val::Obj(o) => {
            spend(2)?;
            let mut out = Map::new();
            for (k, x) in o.iter() {
                let key = match k {
                    Val::TStr(b) | Val::BStr(b) => text(b),
                    other => other.to_string(),
                };
                if key.len() + 3 > *budget {
                    return Err(JqError::OutputTooLarge { limit });
                }
                *budget -= key.len() + 3;
                out.insert(key, to_json(x, depth + 1, budget, limit)?);
            }
            Value::Object(out)
        }
    })
}
