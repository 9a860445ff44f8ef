//! Times as people and programs read them: RFC 3339 in UTC with
//! milliseconds (`2026-12-01T19:44:02.123Z`). Every time extpool shows or
//! serializes is written by [`rfc3339`]; a `SystemTime` field of a type
//! that reaches JSON says
//! `#[serde(serialize_with = "extpool_core::time::serialize")]` (or
//! [`serialize_option`]), never serde's `{secs_since_epoch, …}`.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as RFC 3339 in UTC with milliseconds (`1970-01-01T00:00:00.000Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_millis(),
        ),
        Err(before) => {
            // Before the epoch: whole seconds rounded down, the rest counted up.
            let d = before.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            let millis = d.as_millis() % 1000;
            let millis = u32::try_from(millis).unwrap_or(0);
            if millis == 0 {
                (-secs, 0)
            } else {
                (-secs - 1, 1000 - millis)
            }
        }
    };
    let days = secs.div_euclid(86_400);
    let in_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// Serializes a `SystemTime` as [`rfc3339`] (`serialize_with`).
pub fn serialize<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

/// Serializes an `Option<SystemTime>` as [`rfc3339`] or `null`
/// (`serialize_with`).
pub fn serialize_option<S: serde::Serializer>(
    t: &Option<SystemTime>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// The proleptic Gregorian date of a day counted from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both fit: day is 1..=31, month 1..=12.
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at_ms(ms: i64) -> SystemTime {
        let d = Duration::from_millis(ms.unsigned_abs());
        if ms >= 0 {
            UNIX_EPOCH + d
        } else {
            UNIX_EPOCH - d
        }
    }

    #[test]
    fn times_read_as_rfc_3339_in_utc_with_milliseconds() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(at_ms(1_796_154_242_123)),
            "2026-12-01T19:44:02.123Z"
        );
        assert_eq!(
            rfc3339(at_ms(1_709_251_199_999)),
            "2024-02-29T23:59:59.999Z"
        );
        assert_eq!(rfc3339(at_ms(951_782_400_000)), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(at_ms(-1)), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(at_ms(-86_400_000)), "1969-12-31T00:00:00.000Z");
    }

    #[test]
    fn a_field_serializes_as_a_string_or_null() {
        #[derive(serde::Serialize)]
        struct Row {
            #[serde(serialize_with = "serialize")]
            at: SystemTime,
            #[serde(serialize_with = "serialize_option")]
            last: Option<SystemTime>,
        }
        let row = Row {
            at: at_ms(1_796_154_242_123),
            last: None,
        };
        assert_eq!(
            serde_json::to_value(&row).unwrap(),
            serde_json::json!({"at": "2026-12-01T19:44:02.123Z", "last": null})
        );
    }
}
