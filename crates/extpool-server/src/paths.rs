//! The gateway's fixed HTTP paths that more than one layer names: the
//! login's (served by `login`, let through by the guard without a token).

/// The path the identity provider sends the browser back to.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// The gateway's login page, where a caller's browser starts its login
/// (`?state=`): it shows who will be logged in and binds the login to the
/// browser that goes on.
pub const LOGIN_PAGE_PATH: &str = "/oauth/login";
