//! `rtcheck review`: walk the application checklist, check declared values against the
//! measured rules, record the answers and gate CI on them.
//!
//! - `items`: review metadata (values asked, rule, what measures an item, profile selection)
//! - `rules`: the rule checks, pure
//! - `lifecycle`: read deadline and reconnect policy, alone and against the path's chain
//! - `answers`: the answers file (`--answers`, `--save`)
//! - `measured`: `--evidence FILE` JSON to measurements
//! - `evaluate`: items + answers + measurements to findings (pure)
//!
//! The flags, the interactive walk and the writing live in the command layer
//! (`cmd::review`); the report envelope is `report::model::ReviewReport`.
pub mod answers;
pub mod evaluate;
pub mod items;
pub mod lifecycle;
pub mod measured;
pub mod rules;

pub use evaluate::{LeftOut, ReviewItem, Source};

use crate::checklist::{self, Checklist, Item};
use crate::profile::Profile;

/// Checklist names the review walks by default.
pub const CHECKLISTS: &[&str] = &["realtime-ops", "async-service"];

/// Every item id of the embedded checklists (what an answers file may name).
pub fn known_ids() -> Vec<&'static str> {
    checklist::all()
        .iter()
        .flat_map(|c| c.items.iter().map(|i| i.id.as_str()))
        .collect()
}

pub type Selected = Vec<(&'static Checklist, &'static Item)>;

/// Items to review for a profile: the named checklists, minus what the profile or the
/// audit leaves out; `only` (ids) narrows the list and wins over the profile.
pub fn select(
    names: &[String],
    only: &[String],
    p: &Profile,
) -> anyhow::Result<(Selected, Vec<LeftOut>)> {
    let mut lists = Vec::new();
    for n in names {
        let c = checklist::by_name(n).ok_or_else(|| {
            anyhow::anyhow!(
                "--checklist: unknown checklist `{n}` (known: {})",
                CHECKLISTS.join(", ")
            )
        })?;
        lists.push(c);
    }
    let known = known_ids();
    if let Some(bad) = only.iter().find(|id| !known.contains(&id.as_str())) {
        anyhow::bail!("--only: unknown item `{bad}` (see `rtcheck checklist`)");
    }
    let mut selected = Vec::new();
    let mut left = Vec::new();
    for c in lists {
        for i in &c.items {
            if !only.is_empty() {
                if only.contains(&i.id) {
                    selected.push((c, i));
                }
                continue;
            }
            match items::left_out(&i.id, p) {
                Some(reason) => left.push(LeftOut {
                    id: i.id.clone(),
                    reason,
                }),
                None => selected.push((c, i)),
            }
        }
    }
    if selected.is_empty() {
        anyhow::bail!("no item to review (--only names items outside --checklist?)");
    }
    Ok((selected, left))
}

/// Notes the review adds for a profile: defaults that sized the rules, and what the series
/// did not measure.
pub fn notes(p: &Profile, profile_given: bool) -> Vec<String> {
    use crate::choose::decide::Topology;
    use rtcheck_wire::delivery::Delivery;
    let mut out = Vec::new();
    if !profile_given {
        out.push(format!(
            "No --profile: the rules are sized for the defaults ({} connections on {} machine, {} msg/s of {} B per client, max disconnect {}); save yours with `rtcheck choose --save profile.yaml`.",
            crate::evidence::fmt_num(p.connections as f64),
            p.machines,
            crate::evidence::fmt_num(p.rate),
            p.size,
            rtcheck_base::units::fmt_duration(p.max_disconnect)
        ));
    }
    if let (Some(Delivery::SeqRing | Delivery::SessionAck), Topology::Pubsub) = items::design(p) {
        out.push(crate::choose::decide::CROSS_NODE_REPLAY_NOTE.into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_id_is_a_checklist_item() {
        // SPECS, MEASURED_BY, LEFT_TO_AUDIT and left_out name items through ItemId.
        for id in items::ItemId::ALL {
            assert!(checklist::find_item(id.as_str()).is_some(), "{id}");
            assert_eq!(items::ItemId::parse(id.as_str()), Some(*id));
        }
        let specs: std::collections::HashSet<_> = items::SPECS.iter().map(|s| s.item).collect();
        assert_eq!(specs.len(), items::SPECS.len(), "one spec per item");
        assert_eq!(
            items::ItemId::parse("ping_interval"),
            None,
            "the text is exact"
        );
    }

    #[test]
    fn only_and_unknown_names() {
        let p = Profile::default();
        let all: Vec<String> = CHECKLISTS.iter().map(|s| s.to_string()).collect();
        let (sel, _) = select(&all, &["ping-interval".into()], &p).unwrap();
        assert_eq!(sel.len(), 1);
        assert!(select(&all, &["nope".into()], &p)
            .unwrap_err()
            .to_string()
            .contains("`nope`"));
        assert!(select(&["x".into()], &[], &p).is_err());
        let (sel, left) = select(&all, &[], &p).unwrap();
        assert!(sel.iter().all(|(_, i)| i.id != "open-files"));
        assert!(left.iter().any(|l| l.id == "open-files"));
    }
}
