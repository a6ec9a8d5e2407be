//! The user grants of `POST /oauth2/token`: `authorization_code` (RFC 6749 section 4.1.3 with
//! PKCE, RFC 7636 section 4.6) and `refresh_token` (section 6) with rotation and reuse
//! detection (OAuth 2.0 Security BCP, RFC 9700 section 4.14.2).

use std::collections::{HashMap, HashSet};

use serde_json::json;
use wiremock::Request;

use super::super::ErrorReply;
use super::super::jwt::unix_now;
use super::super::pkce::s256_challenge;
use super::super::reply::Answer;
use super::super::secrets::{constant_time_eq, random_value};
use super::id_token::IdTokenClaims;
use super::{AuthServer, Form, token_response};

/// An authorization code waiting to be exchanged.
#[derive(Debug, Clone)]
pub(crate) struct PendingCode {
    pub(crate) client_id: String,
    /// As sent in the authorization request; the token request must repeat it exactly.
    pub(crate) redirect_uri: String,
    pub(crate) challenge: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) nonce: Option<String>,
    pub(crate) subject: String,
    /// Unix seconds.
    pub(crate) expires_at: i64,
}

/// One issued refresh token.
#[derive(Debug, Clone)]
struct RefreshRecord {
    /// Every token renewed from one sign-in shares a family.
    family: u64,
    client_id: String,
    subject: String,
    scopes: Vec<String>,
    /// Unix seconds.
    expires_at: i64,
    /// Replaced by a newer token: presenting it again revokes the family.
    rotated: bool,
}

/// Codes and refresh tokens: the authorization server's session state.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    pub(crate) codes: HashMap<String, PendingCode>,
    /// Codes already exchanged, with the family they started.
    spent_codes: HashMap<String, u64>,
    refresh: HashMap<String, RefreshRecord>,
    revoked_families: HashSet<u64>,
    next_family: u64,
    /// Replaced refresh tokens presented again.
    reuses: u64,
}

impl Sessions {
    /// Revokes every refresh token issued so far.
    pub(crate) fn revoke_all(&mut self) {
        let families: Vec<u64> = self.refresh.values().map(|r| r.family).collect();
        self.revoked_families.extend(families);
    }

    /// Revokes the grant of refresh token `token` when it was issued to `client_id` (RFC 7009:
    /// revoking a refresh token ends its grant). False when there is no such token.
    pub(crate) fn revoke_refresh_token(&mut self, token: &str, client_id: &str) -> bool {
        let Some(record) = self.refresh.get(token).filter(|r| r.client_id == client_id) else { return false };
        let family = record.family;
        self.revoked_families.insert(family);
        true
    }

    /// Whether `record` would be accepted now.
    fn is_active(&self, record: &RefreshRecord) -> bool {
        !record.rotated && !self.revoked_families.contains(&record.family) && record.expires_at > unix_now()
    }

    /// The subject, client and scopes of an active refresh token (for introspection).
    pub(crate) fn active_refresh(&self, token: &str) -> Option<(&str, &str, &[String], i64)> {
        let record = self.refresh.get(token)?;
        self.is_active(record).then_some((
            record.subject.as_str(),
            record.client_id.as_str(),
            &record.scopes[..],
            record.expires_at,
        ))
    }

    /// The active refresh tokens of `subject`, by family (sign-in), oldest first.
    pub(crate) fn active_refresh_tokens(&self, subject: &str) -> Vec<String> {
        let mut active: Vec<(u64, &String)> = self
            .refresh
            .iter()
            .filter(|(_, record)| record.subject == subject && self.is_active(record))
            .map(|(token, record)| (record.family, token))
            .collect();
        active.sort();
        active.into_iter().map(|(_, token)| token.clone()).collect()
    }

    /// Replaced refresh tokens presented again.
    pub(crate) fn reuses(&self) -> u64 {
        self.reuses
    }

    fn new_refresh_token(
        &mut self,
        family: u64,
        client_id: &str,
        subject: &str,
        scopes: &[String],
        lifetime: i64,
    ) -> String {
        let token = random_value();
        self.refresh.insert(
            token.clone(),
            RefreshRecord {
                family,
                client_id: client_id.to_owned(),
                subject: subject.to_owned(),
                scopes: scopes.to_vec(),
                expires_at: unix_now().saturating_add(lifetime),
                rotated: false,
            },
        );
        token
    }
}

fn invalid_grant(description: &str) -> ErrorReply {
    ErrorReply::new(400, "invalid_grant", description)
}

/// What a user token response is made of.
struct UserGrant<'a> {
    client_id: &'a str,
    subject: &'a str,
    scopes: &'a [String],
    nonce: Option<&'a str>,
    refresh_token: Option<String>,
    /// A refresh response rather than a sign-in.
    refreshed: bool,
}

impl AuthServer {
    /// `grant_type=authorization_code`: one use per code, the same client and redirect URI as
    /// the authorization request, and a verifier whose S256 digest is the challenge.
    pub(super) fn authorization_code(&self, request: &Request, form: &Form) -> Result<Answer, ErrorReply> {
        let (client_id, _) = self.identify_client(request, form)?;
        let code = form.require("code")?;
        let redirect_uri = form.require("redirect_uri")?;
        let verifier = form.get("code_verifier");
        let mut sessions = self.shared.sessions();
        let Some(pending) = sessions.codes.remove(code) else {
            // RFC 6749 section 4.1.2: a code used twice revokes what it issued.
            if let Some(family) = sessions.spent_codes.get(code).copied() {
                sessions.revoked_families.insert(family);
                return Err(invalid_grant("the authorization code was already used"));
            }
            return Err(invalid_grant("unknown authorization code"));
        };
        let family = sessions.next_family;
        sessions.next_family += 1;
        sessions.spent_codes.insert(code.to_owned(), family);
        if pending.client_id != client_id {
            return Err(invalid_grant("the authorization code was issued to another client"));
        }
        if pending.expires_at <= unix_now() {
            return Err(invalid_grant("the authorization code has expired"));
        }
        if pending.redirect_uri != redirect_uri {
            return Err(invalid_grant("redirect_uri does not match the authorization request"));
        }
        let verifier =
            verifier.ok_or_else(|| ErrorReply::invalid_request("missing parameter code_verifier"))?;
        let challenge = s256_challenge(verifier).ok_or_else(|| {
            ErrorReply::invalid_request("code_verifier must be 43 to 128 unreserved characters")
        })?;
        if !constant_time_eq(challenge.as_bytes(), pending.challenge.as_bytes()) {
            return Err(invalid_grant("code_verifier does not match the code_challenge"));
        }
        let lifetime = self.settings.refresh_token_lifetime_secs;
        let refresh_token =
            sessions.new_refresh_token(family, client_id, &pending.subject, &pending.scopes, lifetime);
        drop(sessions);
        self.user_tokens(&UserGrant {
            client_id,
            subject: &pending.subject,
            scopes: &pending.scopes,
            nonce: pending.nonce.as_deref(),
            refresh_token: Some(refresh_token),
            refreshed: false,
        })
    }

    /// `grant_type=refresh_token`: rotates the refresh token (unless rotation is off); a
    /// rotated token presented again revokes its whole family.
    pub(super) fn refresh_token(&self, request: &Request, form: &Form) -> Result<Answer, ErrorReply> {
        let (client_id, _) = self.identify_client(request, form)?;
        let presented = form.require("refresh_token")?;
        let mut sessions = self.shared.sessions();
        let record =
            sessions.refresh.get(presented).cloned().ok_or_else(|| invalid_grant("unknown refresh token"))?;
        if record.client_id != client_id {
            return Err(invalid_grant("the refresh token was issued to another client"));
        }
        if sessions.revoked_families.contains(&record.family) {
            return Err(invalid_grant("the refresh token has been revoked"));
        }
        if record.rotated {
            sessions.reuses += 1;
            sessions.revoked_families.insert(record.family);
            return Err(invalid_grant("the refresh token was already used; the session is revoked"));
        }
        if record.expires_at <= unix_now() {
            return Err(invalid_grant("the refresh token has expired"));
        }
        // A narrower scope may be asked for, never a wider one (RFC 6749 section 6).
        let scopes = match form.get("scope") {
            None => record.scopes.clone(),
            Some(requested) => {
                let requested: Vec<String> =
                    requested.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect();
                if requested.iter().any(|s| !record.scopes.contains(s)) {
                    return Err(ErrorReply::new(
                        400,
                        "invalid_scope",
                        "the scope exceeds the original grant",
                    ));
                }
                requested
            }
        };
        let refresh_token = if self.settings.rotate_refresh_tokens {
            if let Some(old) = sessions.refresh.get_mut(presented) {
                old.rotated = true;
            }
            let lifetime = record.expires_at - unix_now();
            Some(sessions.new_refresh_token(record.family, client_id, &record.subject, &scopes, lifetime))
        } else {
            None
        };
        drop(sessions);
        self.user_tokens(&UserGrant {
            client_id,
            subject: self.refresh_subject(&record.subject),
            scopes: &scopes,
            nonce: None,
            refresh_token,
            refreshed: true,
        })
    }

    /// The token response of a user grant: access token, refresh token (if any) and, with the
    /// `openid` scope, an ID token.
    fn user_tokens(&self, grant: &UserGrant<'_>) -> Result<Answer, ErrorReply> {
        let access_token = self.access_token(grant.subject, grant.client_id, grant.scopes)?;
        let mut body = json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": self.settings.token_lifetime_secs,
            "scope": grant.scopes.join(" "),
        });
        if let Some(refresh_token) = &grant.refresh_token {
            body["refresh_token"] = json!(refresh_token);
        }
        if grant.scopes.iter().any(|s| s == "openid") {
            let id_token = self.id_token(&IdTokenClaims {
                issuer: &self.settings.issuer,
                subject: grant.subject,
                audience: grant.client_id,
                nonce: grant.nonce,
                lifetime_secs: self.settings.id_token_lifetime_secs,
                refreshed: grant.refreshed,
            })?;
            body["id_token"] = json!(id_token);
        }
        Ok(token_response(body).for_user(grant.subject))
    }
}
