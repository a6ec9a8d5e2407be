//! Secret strings that never print: access tokens and client secrets.

use std::fmt;
use std::sync::Arc;

macro_rules! secret_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// `Debug` and `Display` print `[redacted]`; the value is reachable only through
        /// [`secret`](Self::secret), so it cannot reach a log line by accident.
        #[derive(Clone, PartialEq, Eq)]
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

        impl From<String> for $name {
            fn from(value: String) -> Self {
                $name::new(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                $name::new(value)
            }
        }
    };
}

secret_type! {
    /// An OAuth 2.0 access token (a JWT, spec Part 5.7).
    ///
    /// ```
    /// use business_records::auth::AccessToken;
    /// let token = AccessToken::new("eyJhbGciOi...");
    /// assert_eq!(format!("{token:?}"), "AccessToken([redacted])");
    /// assert_eq!(token.secret(), "eyJhbGciOi...");
    /// ```
    AccessToken
}

secret_type! {
    /// An OAuth 2.0 client secret (spec Part 5.4: never in client-side code, version control
    /// or logs).
    ///
    /// ```
    /// use business_records::auth::ClientSecret;
    /// assert_eq!(ClientSecret::new("s3cr3t").to_string(), "[redacted]");
    /// ```
    ClientSecret
}
