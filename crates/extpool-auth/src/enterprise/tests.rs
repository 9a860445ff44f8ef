use super::*;

fn jwt(header: serde_json::Value, claims: serde_json::Value) -> Secret {
    use base64::Engine as _;
    let enc = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    Secret::new(format!("{}.{}.c2ln", enc(&header), enc(&claims)))
}

fn server() -> TokenEndpointClient {
    TokenEndpointClient {
        issuer: "https://as.example".into(),
        token_endpoint: "https://as.example/token".into(),
        client_id: "gw".into(),
        client_secret: Secret::new("s3cr3t"),
        auth_method: TokenAuthMethod::ClientSecretPost,
    }
}

#[test]
fn an_id_jag_must_be_for_the_server_and_the_client() {
    let typ = serde_json::json!({"alg": "RS256", "typ": "oauth-id-jag+jwt"});
    let good = serde_json::json!({"aud": "https://as.example", "client_id": "gw", "sub": "alice"});
    assert_eq!(
        check_binding(&jwt(typ.clone(), good.clone()), &server()),
        Ok(())
    );
    let listed = serde_json::json!({"aud": ["https://as.example"], "client_id": "gw"});
    assert_eq!(check_binding(&jwt(typ.clone(), listed), &server()), Ok(()));
    let other_as = serde_json::json!({"aud": "https://evil.example", "client_id": "gw"});
    assert!(check_binding(&jwt(typ.clone(), other_as), &server()).is_err());
    let other_client = serde_json::json!({"aud": "https://as.example", "client_id": "x"});
    assert!(check_binding(&jwt(typ, other_client), &server()).is_err());
    let at = serde_json::json!({"alg": "RS256", "typ": "at+jwt"});
    assert!(check_binding(&jwt(at, good), &server()).is_err());
    assert!(check_binding(&Secret::new("opaque"), &server()).is_err());
}

#[test]
fn error_codes_are_bounded_and_printable() {
    assert_eq!(error_code(Some("invalid_grant"), 400), "invalid_grant");
    assert_eq!(error_code(Some("a\nb c"), 400), "abc");
    assert_eq!(error_code(None, 502), "HTTP 502");
    assert_eq!(
        error_code(Some(&"x".repeat(500)), 400).len(),
        crate::oauth_http::MAX_ERROR_CODE
    );
}

#[test]
fn debug_never_shows_a_secret() {
    let printed = format!("{:?}", server());
    assert!(!printed.contains("s3cr3t"), "{printed}");
    let token = IssuedToken {
        access_token: Secret::new("tok-abc"),
        expires_at: Some(1),
    };
    assert!(!format!("{token:?}").contains("tok-abc"));
}
