//! Skills for small models: the host loads the skill that best fits each of the person's
//! messages into the run's system message, so a model that rarely calls `load_skill` still
//! follows the skill, without a turn spent on loading it. Chosen by words, as tools are
//! preselected (`surface::word_scores` over each skill's name and description); the driver
//! fetches the bodies and keeps them within [`LoopConfig::preload_skill_tokens`].
//!
//! Like tool preselection, the choice goes over every message of the conversation in order
//! and only adds at the end: a later run sends the skills an earlier one sent, in the same
//! order, so the system message a server has cached stays a prefix unless a new message needs
//! a new skill.

use std::collections::BTreeSet;

use wright_core::EventBody;

use super::{StartDecision, StartRule, StartView};
use crate::surface::{keywords, word_scores};

/// [`LoopConfig::preload_skill_tokens`](crate::LoopConfig::preload_skill_tokens).
pub(crate) struct PreloadSkills;

impl StartRule for PreloadSkills {
    fn decide(&self, view: &StartView<'_>) -> StartDecision {
        let run = &view.run;
        let skills = &run.facts.skills;
        if run.config.preload_skill_tokens == 0 || skills.is_empty() {
            return StartDecision::default();
        }
        let words: Vec<(BTreeSet<String>, BTreeSet<String>)> = skills
            .iter()
            .map(|skill| (keywords(&skill.name.replace('-', " ")), keywords(&skill.description)))
            .collect();
        let mut chosen: Vec<String> = Vec::new();
        for event in run.history {
            let EventBody::User { text, .. } = &event.body else { continue };
            let scores = word_scores(&words, text);
            // The first of the best, so equal scores keep the list's (name) order.
            let best = scores.iter().enumerate().filter(|(_, score)| **score > 0.0).fold(
                None::<(usize, f64)>,
                |best, (index, score)| match best {
                    Some((_, top)) if top >= *score => best,
                    _ => Some((index, *score)),
                },
            );
            if let Some((index, _)) = best
                && !chosen.contains(&skills[index].name)
            {
                chosen.push(skills[index].name.clone());
            }
        }
        StartDecision { skills: chosen, ..StartDecision::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ContextSkill;
    use crate::policy::testing::Scene;

    fn scene(messages: &[&str]) -> Scene {
        let mut scene = Scene::new(messages);
        scene.config.preload_skill_tokens = 1024;
        scene.facts.skills = vec![
            ContextSkill {
                name: "expense-report".into(),
                description: "Summarise the month's expenses from the expenses table into a report.".into(),
            },
            ContextSkill {
                name: "reading-list".into(),
                description: "Keep the person's books to read in a table, with authors.".into(),
            },
        ];
        scene
    }

    #[test]
    fn each_message_loads_its_best_skill_in_the_order_of_the_messages() {
        let one = scene(&["make my expense report for November"]);
        assert_eq!(PreloadSkills.decide(&one.start_view(true)).skills, ["expense-report"]);
        let two = scene(&["make my expense report for November", "add a book by Le Guin to my reading list"]);
        assert_eq!(PreloadSkills.decide(&two.start_view(true)).skills, ["expense-report", "reading-list"]);
        let again = scene(&["make my expense report", "thanks", "and the expenses report for October"]);
        assert_eq!(PreloadSkills.decide(&again.start_view(true)).skills, ["expense-report"]);
    }

    #[test]
    fn nothing_is_loaded_when_off_or_when_no_skill_shares_a_word() {
        let chat = scene(&["hello, how are you?"]);
        assert!(PreloadSkills.decide(&chat.start_view(true)).skills.is_empty());
        let mut off = scene(&["make my expense report"]);
        off.config.preload_skill_tokens = 0;
        assert!(PreloadSkills.decide(&off.start_view(true)).skills.is_empty());
    }
}
