//! What the server's own methods report when they cannot do what was asked.

use std::fmt;

/// An error of a [`ReferenceServer`](crate::ReferenceServer) method: an argument it cannot
/// use, or an authorization request that [`approve`](crate::ReferenceServer::approve) could not
/// complete.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error {
    /// The argument named cannot be used, for the reason given (e.g. a record that is not a
    /// JSON object, or a URL that is not the server's authorization endpoint).
    InvalidArgument {
        /// The argument, as the method names it.
        argument: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The authorization server answered without sending the browser back to the client:
    /// its status and what its page says (e.g. 400 "the redirect_uri is not registered for
    /// this client"), or an injected fault's status.
    Refused {
        /// The status of the answer.
        status: u16,
        /// The text of the answer, at most 200 characters.
        description: String,
    },
    /// The request could not be sent, or its answer not read.
    Io(std::io::Error),
}

impl Error {
    pub(crate) fn invalid(argument: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { argument, reason: reason.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument { argument, reason } => {
                write!(f, "invalid argument `{argument}`: {reason}")
            }
            Error::Refused { status, description } => {
                write!(f, "the authorization server answered {status}: {description}")
            }
            Error::Io(_) => f.write_str("the authorization request failed on the connection"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}
