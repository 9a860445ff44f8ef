//! Whose a session id is: each caller's ids are its own namespace.
//!
//! A caller with an identity (an issuer's subject, an API key) names its
//! sessions as it likes; the store keeps each under a *whole id*: the
//! caller's id, `~`, and 16 hex digits of its owner key
//! ([`extpool_auth::profile::principal_digest`]). Two callers' `review` are
//! two sessions, so a create never meets another caller's session and no
//! answer tells one caller whether another made an id. The gateway's one
//! caller (no identities) keeps its ids as written.
//!
//! A whole id names the session for anyone who may act on it: an operator
//! uses it for any session (`GET /v1/sessions` shows it), an owner may use
//! it for its own. No caller may choose an id shaped like a whole one.

use extpool_host::core::Principal;
use extpool_state::{MAX_ID_BYTES, SessionId};

use super::SessionError;

/// What joins a caller's id and its owner's digest in a whole id.
const SEPARATOR: char = '~';
/// Hex digits of the owner's digest in a whole id.
const DIGEST_DIGITS: usize = 16;
/// Longest id a caller with an identity may choose: the store's longest
/// less what the whole id adds.
pub const MAX_OWN_ID_BYTES: usize = MAX_ID_BYTES - 1 - DIGEST_DIGITS;

/// Whether `id` is shaped like a whole id (`…~` and 16 lower-case hex
/// digits).
fn is_whole(id: &str) -> bool {
    let Some((name, digest)) = id.rsplit_once(SEPARATOR) else {
        return false;
    };
    !name.is_empty()
        && digest.len() == DIGEST_DIGITS
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The whole id of `id` in the namespace of `owner` (`None`: the
/// gateway's one caller, whose ids are kept as written).
fn within(id: &str, owner: Option<&str>) -> String {
    match owner {
        Some(owner) => format!(
            "{id}{SEPARATOR}{}",
            extpool_auth::profile::principal_digest(owner)
        ),
        None => id.to_owned(),
    }
}

/// The whole id of the session `id` that the caller whose owner key is
/// `owner` chooses for a new session. An id the store would refuse is
/// refused with the store's words; one shaped like a whole id, or too long
/// to take the owner's digest, with what to choose instead.
pub(crate) fn chosen(id: &str, owner: Option<&str>) -> Result<SessionId, SessionError> {
    SessionId::new(id)?;
    if is_whole(id) {
        return Err(SessionError::ReservedId {
            id: id.to_owned(),
            reason: format!(
                "an id ending in {SEPARATOR} and {DIGEST_DIGITS} hex digits is one the gateway makes (a caller's id with its owner's digest); choose another"
            ),
        });
    }
    if owner.is_some() && id.len() > MAX_OWN_ID_BYTES {
        return Err(SessionError::ReservedId {
            id: extpool_host::core::text::shown_name(id).into_owned(),
            reason: format!(
                "{} bytes; a caller's own session id is at most {MAX_OWN_ID_BYTES} (the gateway adds {} to keep each caller's ids its own)",
                id.len(),
                1 + DIGEST_DIGITS
            ),
        });
    }
    Ok(SessionId::new(within(id, owner))?)
}

/// The stored ids `principal` may mean by `id`, most likely first: its
/// own session of that id, then `id` as written (a whole id; a session of
/// the gateway's one caller; one made before ids were each caller's own).
/// Whether `principal` may act on what is found is checked by whoever
/// finds it.
pub(super) fn candidates(id: &str, principal: &Principal) -> Result<Vec<SessionId>, SessionError> {
    let written = SessionId::new(id)?;
    let owner = crate::identity::owner_of(principal);
    if is_whole(id) || owner.is_none() || id.len() > MAX_OWN_ID_BYTES {
        return Ok(vec![written]);
    }
    Ok(vec![SessionId::new(within(id, owner.as_deref()))?, written])
}

/// Session `id` as `principal` names it: without its owner's digest when
/// it is `principal`'s own, whole otherwise.
pub(crate) fn shown(id: &SessionId, principal: Option<&Principal>) -> String {
    let whole = id.as_str();
    let own = principal
        .and_then(crate::identity::owner_of)
        .map(|owner| within("", Some(&owner)));
    match own {
        Some(suffix) if is_whole(whole) => whole
            .strip_suffix(suffix.as_str())
            .unwrap_or(whole)
            .to_owned(),
        _ => whole.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_ids_are_its_own_and_whole_ids_are_nobodys_to_choose() {
        let alice = Principal::api_key("alice", false);
        let owner = crate::identity::owner_of(&alice);
        let whole = chosen("review", owner.as_deref()).unwrap();
        assert!(is_whole(whole.as_str()), "{whole}");
        assert_ne!(whole, chosen("review", Some("bob")).unwrap());
        assert_eq!(chosen("review", None).unwrap().as_str(), "review");
        assert_eq!(shown(&whole, Some(&alice)), "review");
        assert_eq!(
            shown(&whole, Some(&Principal::api_key("bob", true))),
            whole.as_str()
        );
        assert_eq!(shown(&whole, None), whole.as_str());
        assert_eq!(
            candidates("review", &alice).unwrap(),
            [whole.clone(), SessionId::new("review").unwrap()]
        );
        assert_eq!(
            candidates(whole.as_str(), &alice).unwrap(),
            std::slice::from_ref(&whole)
        );
        assert_eq!(
            candidates("review", &Principal::local()).unwrap(),
            [SessionId::new("review").unwrap()]
        );
        for reserved in [whole.as_str(), "x~0123456789abcdef"] {
            assert!(
                matches!(chosen(reserved, None), Err(SessionError::ReservedId { .. })),
                "{reserved}"
            );
        }
        for fine in ["x~0123456789ABCDEF", "x~0123", "~0123456789abcdef0"] {
            assert!(chosen(fine, owner.as_deref()).is_ok(), "{fine}");
        }
        let longest = "a".repeat(MAX_OWN_ID_BYTES);
        assert!(chosen(&longest, owner.as_deref()).is_ok());
        assert!(matches!(
            chosen(&format!("{longest}a"), owner.as_deref()),
            Err(SessionError::ReservedId { .. })
        ));
        assert!(chosen(&format!("{longest}a"), None).is_ok());
    }
}
