//! Sessions started by the person (seed 001, "Session Division"): from the session list or by
//! typing `/newsession [name]` in any channel, which also opens a conversation in the new
//! session.

use wright_core::AgentId;
use wright_store::{Session, SessionStarter, Store};

use super::DomainError;

/// A new session and the conversation opened in it.
#[derive(Debug)]
pub struct NewSession {
    pub session: Session,
    pub conversation_id: String,
}

/// Ends the open session, starts one by the person and opens a conversation in it.
pub async fn start_for_person(store: &Store, agent: &AgentId, name: Option<&str>) -> Result<NewSession, DomainError> {
    let session = store.start_session(agent, name, SessionStarter::Person).await?;
    let conversation_id = uuid::Uuid::now_v7().to_string();
    store.create_conversation(agent, &conversation_id, &session.name).await?;
    let session = store.session(agent, session.id).await?;
    Ok(NewSession { session, conversation_id })
}
