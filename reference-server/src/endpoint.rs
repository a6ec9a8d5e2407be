//! The endpoints a test can name: for faults, counts and the journal.

/// One endpoint of the reference server, as [`Faults::on`](crate::Faults::on),
/// [`ReferenceServer::requests`](crate::ReferenceServer::requests),
/// [`ReferenceServer::fault_counts`](crate::ReferenceServer::fault_counts) and
/// [`JournalEntry::endpoint`](crate::JournalEntry::endpoint) name it. An API endpoint is the
/// same endpoint in every version served (`/v1/companies` and `/v2/companies` are both
/// [`Endpoint::Companies`]).
///
/// ```
/// use business_records_reference_server::{Endpoint, Fault, Faults};
///
/// // The second company page, the first token request, and the third request to the
/// // resource `notes` the test declared, whatever its method.
/// let faults = Faults::new()
///     .on(Endpoint::Companies, 2, Fault::Status(503))
///     .on(Endpoint::Token, 1, Fault::Html(502))
///     .on(Endpoint::Resource("notes"), 3, Fault::DropConnection);
/// # let _ = faults;
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `GET /v{n}/companies`.
    Companies,
    /// `GET /v{n}/contacts`.
    Contacts,
    /// `GET /v{n}/companies/{id}`: one company.
    Company,
    /// `GET /v{n}/contacts/{id}`: one contact.
    Contact,
    /// Every request to a resource the test declared with
    /// [`list`](crate::ReferenceServerBuilder::list) or
    /// [`collection`](crate::ReferenceServerBuilder::collection), by its name: `/v{n}/{name}`
    /// and `/v{n}/{name}/{id}`, whatever the method. The name is a `&'static str`, as a test
    /// writes it, so that `Endpoint` stays `Copy`.
    Resource(&'static str),
    /// `GET /oauth2/authorize`.
    Authorize,
    /// `POST /oauth2/token`.
    Token,
    /// `GET /.well-known/jwks.json`.
    Jwks,
    /// `GET /.well-known/openid-configuration` and `GET /.well-known/oauth-authorization-server`.
    Discovery,
    /// `POST /oauth2/introspect`.
    Introspect,
    /// `POST /oauth2/revoke`.
    Revoke,
}

impl Endpoint {
    /// Whether the endpoint is the API's (on [`base_url`](crate::ReferenceServer::base_url))
    /// rather than the authorization server's.
    pub fn is_api(self) -> bool {
        matches!(
            self,
            Endpoint::Companies
                | Endpoint::Contacts
                | Endpoint::Company
                | Endpoint::Contact
                | Endpoint::Resource(_)
        )
    }
}
