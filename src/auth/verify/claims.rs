//! The claims of a verified access token.

use chrono::{DateTime, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::bounds::{numeric_date, optional_numeric_date};

/// The validated claims of an access token.
///
/// Claims the struct does not name are kept in [`extra`](Self::extra).
#[non_exhaustive]
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Claims {
    /// Issuer: the authorization server.
    pub iss: String,
    /// Subject: the user, or the client id for client-credentials tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// Audiences; a single string in the token is read as a one-element list.
    #[serde(deserialize_with = "string_or_seq")]
    pub aud: Vec<String>,
    /// Expiry, seconds since the Unix epoch. A fraction is rounded down, and a time past the
    /// year 9999 counts as its end.
    #[serde(deserialize_with = "numeric_date")]
    pub exp: i64,
    /// Issue time, seconds since the Unix epoch, read as `exp` is; absent when it is not a
    /// number of seconds since 1970.
    #[serde(default, deserialize_with = "optional_numeric_date", skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// Space-separated granted scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The OAuth client the token was issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Every other claim of the token.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

impl Claims {
    /// The granted scopes, split on spaces.
    ///
    /// ```
    /// # use business_records::auth::Claims;
    /// # fn check(claims: &Claims) {
    /// for scope in claims.scopes() {
    ///     println!("granted: {scope}");
    /// }
    /// # }
    /// ```
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scope.as_deref().unwrap_or("").split(' ').filter(|s| !s.is_empty())
    }

    /// Whether `scope` is among the granted scopes (exact match).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().any(|s| s == scope)
    }

    /// The expiry (`exp`) as a UTC timestamp.
    pub fn expires_at(&self) -> DateTime<Utc> {
        let bound = if self.exp < 0 { DateTime::<Utc>::MIN_UTC } else { DateTime::<Utc>::MAX_UTC };
        DateTime::from_timestamp(self.exp, 0).unwrap_or(bound)
    }
}

fn string_or_seq<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(one) => Ok(vec![one]),
        many => serde_json::from_value(many).map_err(D::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::Claims;

    #[test]
    fn an_expiry_no_date_holds_is_the_first_or_the_last_date() {
        let read = serde_json::from_value::<Claims>(json!({"iss": "i", "aud": "a", "exp": 1e30}));
        let mut claims = read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(claims.exp, 253_402_300_799, "read as the last second of 9999");
        // An application may set `exp` itself, to anything.
        for (exp, expected) in [
            (i64::MIN, DateTime::<Utc>::MIN_UTC),
            (-1, DateTime::from_timestamp(-1, 0).unwrap_or_default()),
            (0, DateTime::UNIX_EPOCH),
            (i64::MAX, DateTime::<Utc>::MAX_UTC),
        ] {
            claims.exp = exp;
            assert_eq!(claims.expires_at(), expected, "{exp}");
        }
    }
}
