//! placeholder
#![allow(missing_docs)]
#[derive(Debug, thiserror::Error)]
#[error("verify")]
pub struct VerifyError;
pub struct Claims;
pub struct TokenVerifier;
