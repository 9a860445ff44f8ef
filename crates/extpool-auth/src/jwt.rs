//! Reading a compact JWT without checking it: the one reader of a token's
//! header and claims for what extpool only looks at (an ID-JAG's binding
//! before it is sent on, the claims of a token its issuer just issued or
//! the gateway verified already). Verifying a token is [`crate::resource`]'s.

use base64::Engine as _;
use serde_json::Value;

/// The header and claims of `token`, a compact JWS (three dot-separated
/// base64url parts, the first two JSON), read without checking its
/// signature; `None` for anything else.
pub(crate) fn unverified_parts(token: &str) -> Option<(Value, Value)> {
    let mut parts = token.split('.');
    let (Some(header), Some(claims), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some((decode(header)?, decode(claims)?))
}

/// One base64url JSON part (trailing `=` padding tolerated).
fn decode(part: &str) -> Option<Value> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(v: &Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    #[test]
    fn reads_a_signed_jwt_and_refuses_other_shapes() {
        let header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
        let claims = serde_json::json!({"sub": "alice", "aud": "x"});
        let token = format!("{}.{}.sig", part(&header), part(&claims));
        assert_eq!(
            unverified_parts(&token),
            Some((header.clone(), claims.clone()))
        );
        let padded = format!("{}==.{}=.sig", part(&header), part(&claims));
        assert_eq!(
            unverified_parts(&padded),
            Some((header.clone(), claims.clone()))
        );
        let two = format!("{}.{}", part(&header), part(&claims));
        assert_eq!(unverified_parts(&two), None);
        let four = format!("{}.{}.sig.more", part(&header), part(&claims));
        assert_eq!(unverified_parts(&four), None);
        assert_eq!(unverified_parts("opaque"), None);
        assert_eq!(unverified_parts("a.b.c"), None);
    }
}
