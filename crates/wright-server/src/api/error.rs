//! The one error shape of the API, and a JSON extractor whose rejections use it.

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;
use wright_core::CoreError;
use wright_store::StoreError;
use wright_tools::ToolError;

use crate::domain::DomainError;

/// `{"error": {"code", "message"}}` with a status chosen on purpose for each failure.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub(super) struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub(super) struct ErrorDetail {
    /// A stable, machine-readable code such as `not_found` or `invalid_arguments`.
    pub code: String,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// A failure the client cannot fix: logged in full, answered without detail.
    pub fn internal(error: &dyn std::fmt::Display) -> Self {
        tracing::error!(%error, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error; see the server log")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: ErrorDetail { code: self.code.to_owned(), message: self.message } };
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match &error {
            StoreError::AgentNotFound(_)
            | StoreError::VersionNotFound { .. }
            | StoreError::ConversationNotFound(_)
            | StoreError::PendingNotFound(_)
            | StoreError::ItemNotFound { .. } => Self::new(StatusCode::NOT_FOUND, "not_found", error.to_string()),
            StoreError::AgentExists(_)
            | StoreError::AlreadyAnswered(_)
            | StoreError::ItemExists { .. }
            | StoreError::RunNotOwned(_) => Self::new(StatusCode::CONFLICT, "conflict", error.to_string()),
            StoreError::InvalidEdit(_) => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", error.to_string()),
            StoreError::LimitExceeded(_) => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "limit", error.to_string()),
            StoreError::RateLimited { .. } => {
                Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", error.to_string())
            }
            StoreError::TooLargeToDiff(_) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "too_large_to_diff", error.to_string())
            }
            StoreError::Database(_) | StoreError::Migration(_) | StoreError::DiffFailed(_) => Self::internal(&error),
        }
    }
}

impl From<ToolError> for ApiError {
    fn from(error: ToolError) -> Self {
        let status = match &error {
            ToolError::UnknownTool { .. } | ToolError::NotFound(_) => StatusCode::NOT_FOUND,
            ToolError::InvalidArguments { .. }
            | ToolError::Rejected(_)
            | ToolError::LimitExceeded(_)
            | ToolError::Code { .. }
            | ToolError::Denied(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ToolError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ToolError::Cancelled(_) => StatusCode::CONFLICT,
            ToolError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ToolError::Network(_) => StatusCode::BAD_GATEWAY,
            ToolError::NotConfigured(_) => StatusCode::SERVICE_UNAVAILABLE,
            ToolError::Internal(_) => return Self::internal(&error),
        };
        Self::new(status, error.category().as_str(), error.to_string())
    }
}

/// The one place a domain failure gets its HTTP status.
impl From<DomainError> for ApiError {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::NoModel(problem) => Self::new(StatusCode::SERVICE_UNAVAILABLE, "no_provider", problem),
            DomainError::RunInProgress => Self::new(StatusCode::CONFLICT, "run_in_progress", error.to_string()),
            DomainError::RateLimited(message) => Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message),
            DomainError::Invalid(message) => Self::bad_request(message),
            DomainError::Core(error) => error.into(),
            DomainError::Store(error) => error.into(),
            DomainError::Schedule(error) => error.into(),
            DomainError::Internal(_) => Self::internal(&error),
        }
    }
}

/// A schedule's failures answer as the store's of the same kind: a request that cannot apply
/// (422), a limit, or the store's own.
impl From<wright_schedules::ScheduleError> for ApiError {
    fn from(error: wright_schedules::ScheduleError) -> Self {
        use wright_schedules::ScheduleError;
        match error {
            ScheduleError::Invalid(message) => StoreError::InvalidEdit(message).into(),
            ScheduleError::Limit(message) => StoreError::LimitExceeded(message).into(),
            ScheduleError::Store(error) => error.into(),
        }
    }
}

impl From<CoreError> for ApiError {
    fn from(error: CoreError) -> Self {
        Self::bad_request(error.to_string())
    }
}

/// `axum::Json` whose rejection is an [`ApiError`], so a malformed body gets the same shape.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(ApiError::new(rejection.status(), "invalid_body", rejection.body_text())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each domain failure gets its status here and only here, with its meaning kept in the
    /// code a client reads.
    #[test]
    fn every_domain_error_maps_to_its_status_and_code() {
        let cases = [
            (DomainError::NoModel("set a model".into()), StatusCode::SERVICE_UNAVAILABLE, "no_provider"),
            (DomainError::RunInProgress, StatusCode::CONFLICT, "run_in_progress"),
            (DomainError::RateLimited("slow down".into()), StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            (DomainError::Invalid("not an object".into()), StatusCode::BAD_REQUEST, "bad_request"),
            (DomainError::Core(CoreError::InvalidAgentId("..".into())), StatusCode::BAD_REQUEST, "bad_request"),
            (DomainError::Store(StoreError::ConversationNotFound("c".into())), StatusCode::NOT_FOUND, "not_found"),
            (DomainError::Store(StoreError::AlreadyAnswered("t".into())), StatusCode::CONFLICT, "conflict"),
            (DomainError::Internal("the keys file".into()), StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        ];
        for (error, status, code) in cases {
            let shown = error.to_string();
            let api = ApiError::from(error);
            assert_eq!((api.status, api.code), (status, code), "{shown}");
        }
        let internal = ApiError::from(DomainError::Internal("the keys file: permission denied".into()));
        assert!(!internal.message.contains("keys file"), "a 5xx says nothing of internals");
    }
}
