//! The one rule for the addresses extpool reaches over HTTP — an MCP
//! server's `url`, a discovery source, a gateway's allowed origin: the
//! scheme is `http` or `https` (ignoring case), written as `scheme://`.
//! Configuration checking, the MCP client and discovery all call
//! [`check_http_url`], so a URL `config check` accepts is one the client
//! connects to.

/// Why a URL is not an `http://` or `https://` one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpUrlError {
    /// No `scheme://` at the start (`localhost:8080/mcp`).
    #[error("expected an http:// or https:// URL")]
    NoScheme,
    /// Another scheme (`file://`, `ftp://`).
    #[error("scheme {scheme:?} is not http or https")]
    Scheme {
        /// The scheme as written (Debug-escaped when shown).
        scheme: String,
    },
}

/// Whether `scheme` (without `://`) is `http` or `https`, ignoring case.
pub fn is_http_scheme(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
}

/// Checks that `url` starts with `http://` or `https://` (ignoring case).
pub fn check_http_url(url: &str) -> Result<(), HttpUrlError> {
    let Some((scheme, _)) = url.split_once("://") else {
        return Err(HttpUrlError::NoScheme);
    };
    // A scheme is letters, digits, `+`, `-` and `.`; anything else before
    // `://` (`localhost:8080/x://`) is no scheme at all.
    let is_scheme = scheme
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if scheme.is_empty() || !is_scheme {
        return Err(HttpUrlError::NoScheme);
    }
    if !is_http_scheme(scheme) {
        return Err(HttpUrlError::Scheme {
            scheme: scheme.to_owned(),
        });
    }
    Ok(())
}

/// True when [`check_http_url`] accepts `url`.
pub fn is_http_url(url: &str) -> bool {
    check_http_url(url).is_ok()
}

/// Whether a URL's host (as a URL writes it: IPv6 in brackets or not)
/// names this machine: `localhost` and `*.localhost`, `127.0.0.0/8`,
/// `::1`. The one rule for where plain `http://` may carry a token.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let host = bare.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_localhost_and_loopback_addresses() {
        for yes in [
            "localhost",
            "LOCALHOST",
            "a.localhost",
            "127.0.0.1",
            "127.9.9.9",
            "[::1]",
            "::1",
        ] {
            assert!(is_loopback_host(yes), "{yes}");
        }
        for no in [
            "example.com",
            "localhost.example",
            "10.0.0.1",
            "[::2]",
            "0.0.0.0",
            "",
        ] {
            assert!(!is_loopback_host(no), "{no}");
        }
    }

    #[test]
    fn http_and_https_in_any_case_and_nothing_else() {
        for ok in [
            "http://a",
            "https://a/mcp",
            "HTTPS://A",
            "Http://127.0.0.1:9/",
        ] {
            assert_eq!(check_http_url(ok), Ok(()), "{ok}");
        }
        for (bad, scheme) in [("file:///etc/passwd", "file"), ("gopher://x", "gopher")] {
            assert_eq!(
                check_http_url(bad),
                Err(HttpUrlError::Scheme {
                    scheme: scheme.into()
                })
            );
        }
        for bad in [
            "",
            "localhost:8080/mcp",
            "http:/x",
            "://x",
            "a b://x",
            "http:x",
        ] {
            assert_eq!(check_http_url(bad), Err(HttpUrlError::NoScheme), "{bad:?}");
        }
        assert!(is_http_scheme("HTTP") && !is_http_scheme("ws"));
        let shown = check_http_url("f\u{1b}[31m://x").unwrap_err().to_string();
        assert!(!shown.contains('\u{1b}'), "{shown}");
    }
}
