//! What every example runs against: the embedded reference server, or a real deployment when
//! `BUSINESS_RECORDS_BASE_URL`, `BUSINESS_RECORDS_AUTH_URL`, `BUSINESS_RECORDS_CLIENT_ID` and
//! `BUSINESS_RECORDS_CLIENT_SECRET` are all set.

#![allow(dead_code)]

use business_records::{Auth, Client, ClientBuilder};
use business_records_reference_server::{ReferenceServer, ReferenceServerBuilder};

/// Addresses and client credentials of the API the example talks to.
pub(crate) struct Target {
    pub base_url: String,
    pub auth_url: String,
    pub client_id: String,
    pub client_secret: String,
    /// The embedded server, kept alive as long as the target; `None` for a deployment.
    pub server: Option<ReferenceServer>,
}

impl Target {
    /// The deployment from the environment, or a reference server with default settings.
    pub(crate) async fn from_env() -> Target {
        Target::from_env_or(ReferenceServer::builder()).await
    }

    /// The deployment from the environment, or a reference server built from `builder`.
    pub(crate) async fn from_env_or(builder: ReferenceServerBuilder) -> Target {
        let var =
            |name: &str| std::env::var(format!("BUSINESS_RECORDS_{name}")).ok().filter(|v| !v.is_empty());
        if let (Some(base_url), Some(auth_url), Some(client_id), Some(client_secret)) =
            (var("BASE_URL"), var("AUTH_URL"), var("CLIENT_ID"), var("CLIENT_SECRET"))
        {
            eprintln!("using the deployment at {base_url}");
            return Target { base_url, auth_url, client_id, client_secret, server: None };
        }
        let server = builder.start().await;
        eprintln!(
            "using the embedded reference server: api {} auth {}",
            server.base_url(),
            server.auth_url()
        );
        Target {
            base_url: server.base_url(),
            auth_url: server.auth_url(),
            client_id: server.client_id().to_owned(),
            client_secret: server.client_secret().to_owned(),
            server: Some(server),
        }
    }
}

impl Target {
    /// A client builder for the target, signed in with its client credentials for `api/read`.
    pub(crate) fn client_builder(&self) -> ClientBuilder {
        Client::builder().base_url(self.base_url.as_str()).auth(
            Auth::client_credentials(
                self.auth_url.as_str(),
                self.client_id.as_str(),
                self.client_secret.as_str(),
            )
            .scopes(["api/read"]),
        )
    }
}

/// The exit code of a run, its error printed as a program should print one: the message, then
/// each of its causes (`source()`), one a line. Returning the error from `main` would print
/// its `Debug` form, which is for developers.
pub(crate) fn exit_code(result: Result<(), Box<dyn std::error::Error>>) -> std::process::ExitCode {
    let Err(error) = result else { return std::process::ExitCode::SUCCESS };
    eprintln!("error: {error}");
    for cause in std::iter::successors(error.source(), |&cause| cause.source()) {
        eprintln!("  caused by: {cause}");
    }
    std::process::ExitCode::FAILURE
}
