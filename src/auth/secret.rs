//! Secret strings that never print: tokens, client secrets, authorization codes and PKCE
//! verifiers.

use std::fmt;
use std::sync::Arc;

macro_rules! secret_types {
    ($($(#[$doc:meta])* $name:ident;)+) => {$(
        $(#[$doc])*
        ///
        /// `Debug` and `Display` print `[redacted]`; the value is reachable only through
        /// [`secret`](Self::secret), so it cannot reach a log line by accident. It serialises
        /// as the plain string, for token stores.
        #[derive(Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a secret value.
            pub fn new(value: impl Into<String>) -> Self {
                $name(Arc::from(value.into()))
            }

            /// The secret value itself. Handle with care: never log it.
            pub fn secret(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "([redacted])"))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[redacted]")
            }
        }

    )+};
}

secret_types! {
    /// An OAuth 2.0 access token (a JWT, API Part 5.7).
    ///
    /// ```
    /// use business_records::auth::AccessToken;
    /// let token = AccessToken::new("eyJhbGciOi...");
    /// assert_eq!(format!("{token:?}"), "AccessToken([redacted])");
    /// assert_eq!(token.secret(), "eyJhbGciOi...");
    /// ```
    AccessToken;

    /// An OAuth 2.0 client secret (API Part 5.4: never in client-side code, version control
    /// or logs).
    ///
    /// ```
    /// use business_records::auth::ClientSecret;
    /// assert_eq!(ClientSecret::new("s3cr3t").to_string(), "[redacted]");
    /// ```
    ClientSecret;

    /// An OAuth 2.0 refresh token: obtains new access tokens without the user (API Part 5.6).
    ///
    /// ```
    /// use business_records::auth::RefreshToken;
    /// assert_eq!(format!("{:?}", RefreshToken::new("r1")), "RefreshToken([redacted])");
    /// ```
    RefreshToken;

    /// An OpenID Connect ID token (a JWT with the user's identity claims).
    ///
    /// ```
    /// use business_records::auth::IdToken;
    /// assert_eq!(IdToken::new("eyJ...").to_string(), "[redacted]");
    /// ```
    IdToken;

    /// A PKCE code verifier (API Part 5.2): 43 to 128 characters, sent only in the token
    /// request.
    ///
    /// ```
    /// use business_records::auth::PkceVerifier;
    /// assert_eq!(format!("{:?}", PkceVerifier::new("v")), "PkceVerifier([redacted])");
    /// ```
    PkceVerifier;
}

impl AccessToken {
    /// True when `Bearer <token>` is a valid header value: the token can be sent at all.
    pub(crate) fn fits_header(&self) -> bool {
        http::HeaderValue::from_str(&self.0).is_ok()
    }

    /// The error for a token from `endpoint` that cannot be sent in a header.
    pub(crate) fn unsendable(endpoint: &str) -> crate::Error {
        crate::Error::decode(endpoint, "the access token holds characters not allowed in a header")
    }
}
