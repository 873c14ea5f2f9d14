//! Preparing one request: the tool surface fitted into the window (fewer schemas first, then
//! compaction), the system message, what is said after the history (the time, what the policy
//! added for this turn), and the sampling settings.

use std::collections::BTreeSet;
use std::sync::Arc;

use wright_core::{Event, ToolLoading, ToolSettings, ToolSpec};

use super::compaction::compact;
use super::view::ModelView;
use super::{Run, stored, system_for};
use crate::config::{LoopConfig, limit_reached};
use crate::policy::ANSWER_NOTE;
use crate::ports::ModelRequest;
use crate::surface::{Loaded, surface};

/// One request, ready to send.
pub(super) struct Prepared {
    system: String,
    /// Said after the history (the time, the policy's notes for this turn).
    tail: String,
    /// The specs sent, in the order sent.
    tools: Arc<[ToolSpec]>,
    /// The specs offered (what text-call recovery and loading go by).
    pub(super) offered: Arc<[ToolSpec]>,
    temperature: Option<f32>,
    max_output_tokens: Option<u32>,
    require_tool_call: bool,
    /// The tools this request withheld.
    pub(super) withheld: BTreeSet<String>,
    pub(super) tools_enabled: bool,
    /// Whether the run has tool turns left (the last request has none).
    pub(super) turns_left: bool,
}

impl Prepared {
    pub(super) fn request<'h>(&self, history: &'h [Event]) -> ModelRequest<'h> {
        ModelRequest {
            system: self.system.clone(),
            history,
            tools: Arc::clone(&self.tools),
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            require_tool_call: self.require_tool_call,
            tail: self.tail.clone(),
        }
    }
}

/// The tool part of one request: the specs, the catalogue for the system message, and their
/// size in characters.
struct Fitted {
    offered: Arc<[ToolSpec]>,
    catalogue: String,
    chars: usize,
}

impl Run<'_> {
    /// Prepares the next request, taking what the policy asked it to add.
    pub(super) async fn prepare(&mut self, all_tools: &[ToolSpec]) -> Result<Prepared, crate::AgentError> {
        let next = std::mem::take(&mut self.next);
        let turns_left = self.facts.tool_turns < self.config.max_tool_turns;
        let tools_enabled = turns_left && !next.answer_now;
        // With a stable list, a request that takes no calls still lists the run's tools (its
        // calls are ignored, and the tail says to answer): the prompt stays the cached one,
        // also for the person's next message, which the server compares with this request.
        let listed = tools_enabled || self.config.stable_tool_list;
        let mut fitted = fit(all_tools, &self.settings, &self.facts.loaded, (listed, turns_left), self.config);
        // Fit the request before sending it rather than learn the window from a 400: first
        // fewer schemas (the catalogue instead of every schema), then compaction.
        if self.over(&fitted) && self.settings.loading == ToolLoading::All {
            self.settings.loading = ToolLoading::OnDemand;
            fitted = fit(all_tools, &self.settings, &self.facts.loaded, (listed, turns_left), self.config);
        }
        let keep_recent = match self.budget_chars {
            // Keep at most a third of the window verbatim, so the summary and the rest fit.
            Some(budget) if self.over(&fitted) => self.config.keep_recent_chars.min(budget / 3),
            _ => self.config.keep_recent_chars,
        };
        if (self.view.chars > self.config.compact_above_chars || self.over(&fitted))
            && compact(self.model, self.transcript, &self.view, keep_recent, self.cancel, |older| {
                self.fenced(older, all_tools)
            })
            .await?
        {
            self.view = ModelView::load(self.transcript).await.map_err(stored)?;
            (self.system, self.facts.documents, self.facts.skills, self.facts.learned) =
                system_for(self.transcript, &self.view, self.config).await?;
            self.system.changing = super::with_skills(&self.system.changing, &self.loaded_skills);
        }
        let withholding = tools_enabled && !next.withhold.is_empty();
        let withheld_note = if withholding { withheld_note(&next.withhold) } else { String::new() };
        // What changes from one turn to the next goes after the history, so the system
        // message and the tools stay a prefix the server has cached.
        let limit = if turns_left { String::new() } else { limit_reached(self.config.max_tool_turns) };
        let mut tail = vec![limit.as_str()];
        tail.extend(self.facts.standing_note.as_deref());
        tail.extend(next.note.as_deref());
        if turns_left && next.answer_now {
            tail.push(ANSWER_NOTE);
        }
        tail.push(&withheld_note);
        let tail = tail.into_iter().filter(|section| !section.is_empty()).collect::<Vec<_>>().join("\n\n");
        let mut offered = fitted.offered;
        // Withheld tools leave the list, unless it is kept stable: then their calls are refused.
        if withholding && !self.config.stable_tool_list {
            offered = offered.iter().filter(|spec| !next.withhold.contains(&spec.name)).cloned().collect();
        }
        let system = self.system.with(&fitted.catalogue);
        let require_tool_call = next.require_call && tools_enabled;
        // The tools go in the order they were loaded (preselection puts the best-fitting
        // first), never re-sorted per request: what was sent before stays a cached prefix.
        let tools = Arc::clone(&offered);
        let offered = if tools_enabled { offered } else { Arc::default() };
        Ok(Prepared {
            system,
            tail,
            tools,
            offered,
            temperature: next.temperature.or(self.config.temperature),
            max_output_tokens: self.max_output_tokens,
            require_tool_call,
            withheld: next.withhold,
            tools_enabled,
            turns_left,
        })
    }

    /// Whether a request with `fitted` would not fit the window.
    fn over(&self, fitted: &Fitted) -> bool {
        let system = self.system.fixed.len() + self.system.changing.len();
        self.budget_chars.is_some_and(|budget| system + fitted.chars + self.view.chars > budget)
    }
}

fn fit(
    all_tools: &[ToolSpec],
    settings: &ToolSettings,
    loaded: &Loaded,
    (listed, _turns_left): (bool, bool),
    config: &LoopConfig,
) -> Fitted {
    if !listed {
        // Without tools because the turns are used up, or for an answer asked for (said
        // after the history).
        return Fitted { offered: Arc::default(), catalogue: String::new(), chars: 0 };
    }
    let surface = surface(all_tools, settings, loaded, config.catalogue_descriptions);
    let chars = surface.catalogue.len()
        + surface
            .offered
            .iter()
            .map(|spec| spec.name.len() + spec.description.len() + spec.parameters.to_string().len())
            .sum::<usize>();
    Fitted { offered: surface.offered, catalogue: surface.catalogue, chars }
}

/// What a request that withholds the tools of repeated calls adds to the system message.
fn withheld_note(withheld: &BTreeSet<String>) -> String {
    let names: Vec<String> = withheld.iter().map(|name| format!("`{name}`")).collect();
    format!(
        "## Repeated calls\nYou called {} again and again; the results are above, so it is not offered in this \
         turn. Do the next step of the person's request with another tool, or answer the person in plain words.",
        names.join(", ")
    )
}
