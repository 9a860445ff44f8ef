//! What a plain (unquoted) YAML scalar is, by YAML 1.2's core schema: the
//! one rule of every YAML reader in extpool — SKILL.md frontmatter here,
//! `extpool.yaml` in the config crate — so `1.10`, `0x1F`, `~` or `true`
//! mean the same wherever they are written.

/// A plain scalar, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlainScalar {
    /// `~`, `null` (any of its three spellings) or nothing.
    Null,
    /// `true` / `false` (lower, title or upper case).
    Bool(bool),
    /// A decimal, `0x` hexadecimal or `0o` octal integer within `i64`.
    Int(i64),
    /// A decimal float, `.inf` or `.nan`.
    Float(f64),
    /// Anything else: a string, as written.
    Str,
}

/// Resolves a plain scalar's text by YAML 1.2's core schema.
pub fn resolve_plain_scalar(text: &str) -> PlainScalar {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return PlainScalar::Null,
        "true" | "True" | "TRUE" => return PlainScalar::Bool(true),
        "false" | "False" | "FALSE" => return PlainScalar::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return PlainScalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return PlainScalar::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return PlainScalar::Float(f64::NAN),
        _ => {}
    }
    if let Some(n) = parse_int(text) {
        return PlainScalar::Int(n);
    }
    if looks_like_float(text)
        && let Ok(f) = text.parse::<f64>()
    {
        return PlainScalar::Float(f);
    }
    PlainScalar::Str
}

fn parse_int(text: &str) -> Option<i64> {
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok();
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn looks_like_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mantissa_ok = {
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        (!int.is_empty() || !frac.is_empty())
            && all_digits(int)
            && all_digits(frac)
            && (mantissa.contains('.') || exponent.is_some())
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::PlainScalar::*;
    use super::*;

    #[test]
    fn the_core_schema() {
        for (text, want) in [
            ("", Null),
            ("~", Null),
            ("NULL", Null),
            ("True", Bool(true)),
            ("false", Bool(false)),
            ("-12", Int(-12)),
            ("+7", Int(7)),
            ("0x1F", Int(31)),
            ("0o17", Int(15)),
            ("1.5", Float(1.5)),
            ("1e3", Float(1000.0)),
            ("-.inf", Float(f64::NEG_INFINITY)),
            ("yes", Str),
            ("1.2.3", Str),
            ("-", Str),
            ("v1.2", Str),
            ("99999999999999999999", Str),
        ] {
            assert_eq!(resolve_plain_scalar(text), want, "{text:?}");
        }
        assert!(matches!(resolve_plain_scalar(".nan"), Float(f) if f.is_nan()));
    }
}
