//! `extpool serve`'s identities: the issuer whose access tokens name who
//! is calling, from `--auth-issuer` and its companions or the
//! configuration's `gateway.auth` (the flags win), read once at start so
//! a wrong issuer fails before any server starts.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use extpool_auth::resource::{ClaimMatch, IssuerSettings, TokenVerifier};
use extpool_host::config::GatewayConfig;

use crate::cli::ServeArgs;

/// Whether serve takes an issuer's tokens (so an address other machines
/// reach is guarded without a shared token).
pub(super) fn configured(args: &ServeArgs, config: &GatewayConfig) -> bool {
    !args.stdio && (args.auth_issuer.is_some() || config.auth.is_some())
}

/// The issuer's verifier for a gateway serving on `listener` (none for
/// `--stdio`), said on stderr when there is one.
pub(super) async fn for_listener(
    args: &ServeArgs,
    config: &GatewayConfig,
    listener: Option<&tokio::net::TcpListener>,
) -> Result<Option<Arc<TokenVerifier>>> {
    let Some(listener) = listener else {
        return Ok(None);
    };
    let bound = listener
        .local_addr()
        .context("reading the listen address")?;
    let issuer = issuer(args, config, bound).await?;
    if let Some(issuer) = &issuer {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "callers log in with {} (tokens for {}); each sees only its own sessions",
                issuer.settings().issuer,
                issuer.settings().audiences.join(", ")
            );
        }
    }
    Ok(issuer)
}

/// The issuer's verifier for a gateway bound to `listen`, when one is
/// configured (never for `--stdio`: its one client is the process that
/// started serve).
async fn issuer(
    args: &ServeArgs,
    config: &GatewayConfig,
    listen: std::net::SocketAddr,
) -> Result<Option<Arc<TokenVerifier>>> {
    if args.stdio {
        return Ok(None);
    }
    let configured = config.auth.as_ref();
    let Some(issuer) = args
        .auth_issuer
        .clone()
        .or_else(|| configured.map(|a| a.issuer.clone()))
    else {
        if args.auth_audience.is_some()
            || args.auth_operator.is_some()
            || !args.auth_claims.is_empty()
            || !args.auth_scopes.is_empty()
        {
            bail!(
                "--auth-audience, --auth-claim, --auth-scope and --auth-operator need an issuer (--auth-issuer URL or gateway.auth.issuer)"
            );
        }
        return Ok(None);
    };
    let audience = match args
        .auth_audience
        .clone()
        .or_else(|| configured.and_then(|a| a.audience.clone()))
    {
        Some(audience) => audience,
        None if listen.ip().is_unspecified() => bail!(
            "--auth-audience is needed when serving on {listen}: name the URL clients use to reach this gateway (for example https://gw.example), which the issuer's tokens must be for"
        ),
        None => format!("http://{listen}"),
    };
    let mut settings = IssuerSettings::new(issuer.clone(), audience);
    if !args.auth_claims.is_empty() {
        settings.claims = args.auth_claims.clone();
    } else if let Some(auth) = configured {
        settings.claims = auth.claims.clone();
    }
    if !args.auth_scopes.is_empty() {
        settings.scopes = args.auth_scopes.clone();
    } else if let Some(auth) = configured {
        settings.scopes = auth.scopes.clone();
    }
    let operator = args
        .auth_operator
        .clone()
        .or_else(|| configured.and_then(|a| a.operator.clone()));
    if let Some(operator) = operator {
        settings.operator = Some(
            operator
                .parse::<ClaimMatch>()
                .map_err(anyhow::Error::msg)
                .context("--auth-operator (or gateway.auth.operator)")?,
        );
    }
    let verifier = TokenVerifier::discover(settings)
        .await
        .context("--auth-issuer (or gateway.auth.issuer)")?;
    Ok(Some(Arc::new(verifier)))
}

/// The gateway's own client at its issuer (`gateway.auth.client_id` and
/// `client_secret`, its `${VAR}` resolved now), which exchanges callers'
/// tokens for servers with `oauth.token_exchange`; none when not set.
pub(super) fn delegation(
    config: &GatewayConfig,
) -> Result<Option<extpool_server::delegation::DelegationOptions>> {
    let Some(auth) = &config.auth else {
        return Ok(None);
    };
    let (Some(client_id), Some(secret)) = (&auth.client_id, &auth.client_secret) else {
        return Ok(None);
    };
    let secret = extpool_host::config::expand::expand(secret, &extpool_host::config::process_env)
        .context("gateway.auth.client_secret")?;
    Ok(Some(extpool_server::delegation::DelegationOptions {
        client_id: client_id.clone(),
        client_secret: extpool_auth::Secret::new(secret),
        refresh_margin: extpool_server::delegation::DEFAULT_REFRESH_MARGIN,
    }))
}
