//! Compiling a policy over a revision into a [`ToolTable`], one small
//! step per layer, in order: the catalog's rows (permissions already
//! applied), degraded capabilities, filters, names, deferral, the front
//! end's built-ins; then, for a view that refines the policy ([`refine`]),
//! what its grants and its own servers' names take out, beside the shared
//! rows.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use extpool_catalog::{BuiltinTool, CatalogRevision, CommandKind, Runner, names};
use extpool_core::Scope;

use super::table::{Entry, Rows};
use super::{Layers, Naming, Refinement, Refusal, Row, ToolTable};
use crate::health::Degraded;
use crate::info::ModelTool;
use crate::search;

/// What a compile reads besides the policy.
pub(crate) struct Context<'a> {
    /// The revision (with the ones it overlays).
    pub revision: &'a Arc<CatalogRevision>,
    /// The scope filters are given.
    pub scope: &'a Scope,
    /// The degraded capabilities visible there (read when the policy
    /// leaves them out).
    pub degraded: &'a [Degraded],
}

/// The table of `layers` over `cx.revision`.
pub(crate) fn compile(layers: &Layers, cx: &Context<'_>) -> ToolTable {
    let mut b = Build {
        tools: crate::view::model_tools(cx.revision),
        refused: Vec::new(),
    };
    if layers.exclude_degraded {
        b.degraded(cx.degraded);
    }
    for filter in &layers.filters {
        b.filter(filter.as_ref(), cx.scope);
    }
    let front = &layers.front;
    let (mut rows, refused) = b.named(layers, front);
    let costs = match &layers.deferral {
        Some(_) => rows.iter().map(search::schema_cost).collect(),
        None => Vec::new(),
    };
    let deferring = layers
        .deferral
        .as_ref()
        .is_some_and(|config| defer(&mut rows, &costs, config));
    rows.extend(front.iter().map(|&b| builtin_row(b, layers.naming)));
    if deferring {
        rows.push(builtin_row(BuiltinTool::ToolSearch, layers.naming));
    }
    ToolTable {
        revision: cx.revision.clone(),
        rows: Arc::new(Rows {
            names: index(&rows, refused),
            rows,
            costs,
            budget: layers.deferral.as_ref().map(|d| d.budget_bytes),
            index: OnceLock::new(),
        }),
        refused: HashMap::new(),
        refused_commands: HashMap::new(),
        hidden: HashSet::new(),
        deferring,
    }
}

/// `base` (the shared policy's table over the same revision) with what
/// `refinement` takes out: the names a session's grants do not allow,
/// those another server lists under the name of one of its own servers,
/// and what a caller's rules refuse (tools, the catalog's built-ins, MCP
/// prompts). Only the refusals are new; the rows stay shared.
pub(crate) fn refine(base: &ToolTable, refinement: &Refinement) -> ToolTable {
    let revision = &base.revision;
    let own = match revision.parent() {
        Some(_) => revision.tools().iter().map(|t| t.name.as_str()).collect(),
        None => HashSet::new(),
    };
    let mut refused = HashMap::new();
    let mut hidden = HashSet::new();
    let permissions = revision.permissions();
    // The `permissions.principals` entries this caller's claims match.
    let matched = refinement
        .principal
        .as_ref()
        .map(|p| permissions.matching(p))
        .unwrap_or_default();
    let for_caller = |name: &str| {
        permissions
            .refused_for(&matched, name)
            .map(|rule| Refusal::DeniedForPrincipal {
                name: name.to_owned(),
                rule,
            })
    };
    for (i, row) in base.rows().iter().enumerate() {
        let refusal = match row.builtin {
            // The catalog's built-ins are under a caller's rules as under
            // the gateway's own; the front end's own are under neither.
            Some(b) if b.runner() == Runner::Catalog => for_caller(&row.tool.name),
            _ if row.tool.builtin => None,
            _ => refusal_of(&row.tool, refinement, &own).or_else(|| for_caller(&row.tool.name)),
        };
        let Some(refusal) = refusal else {
            continue;
        };
        hidden.insert(i as u32);
        for name in [&row.tool.name, &row.tool.alias, &row.listed] {
            refused.insert(name.as_str().into(), refusal.clone());
        }
    }
    // What a refusal here takes out no longer counts against the budget.
    let deferring = base.deferring
        && base.rows.budget.is_some_and(|budget| {
            let cost = |i: usize| base.rows.costs.get(i).copied().unwrap_or(0);
            let total: usize = (0..base.rows().len())
                .filter(|i| !hidden.contains(&(*i as u32)))
                .map(cost)
                .sum();
            total > budget
        })
        && base
            .rows()
            .iter()
            .enumerate()
            .any(|(i, r)| r.deferrable && !hidden.contains(&(i as u32)));
    // MCP prompts, as commands: under a caller's rules as under the
    // gateway's own (which leave those they deny out of the revision).
    let commands = match matched.is_empty() {
        true => HashMap::new(),
        false => revision
            .all_commands()
            .filter(|c| c.kind == CommandKind::McpPrompt)
            .filter_map(|c| {
                let rule = permissions.refused_for(&matched, &c.name)?;
                let refusal = Refusal::PromptDeniedForPrincipal {
                    name: c.name.clone(),
                    rule,
                };
                Some((c.name.as_str().into(), refusal))
            })
            .collect(),
    };
    ToolTable {
        revision: revision.clone(),
        rows: base.rows.clone(),
        refused,
        refused_commands: commands,
        hidden,
        deferring,
    }
}

/// Why `refinement` takes `tool` out, if it does: its grants first, then
/// its own servers' names.
fn refusal_of(tool: &ModelTool, refinement: &Refinement, own: &HashSet<&str>) -> Option<Refusal> {
    if let Some(grants) = &refinement.grants
        && !grants.allows(&tool.name)
    {
        return Some(Refusal::NotGranted {
            name: tool.name.clone(),
        });
    }
    let (namespace, _) = names::split(&tool.name)?;
    let server = refinement
        .own_servers
        .iter()
        .find(|s| extpool_core::same_server_name(s, namespace))?;
    (!own.contains(tool.name.as_str())).then(|| Refusal::Shadowed {
        name: tool.name.clone(),
        server: server.clone(),
    })
}

/// A tool taken out: its catalog name, its alias, and why.
type Taken = (String, String, Refusal);

/// The tools left, and those taken out.
struct Build {
    tools: Vec<ModelTool>,
    refused: Vec<Taken>,
}

impl Build {
    /// Takes out the remote tools `why` refuses.
    fn refuse(&mut self, why: impl Fn(&ModelTool) -> Option<Refusal>) {
        let mut kept = Vec::with_capacity(self.tools.len());
        for tool in std::mem::take(&mut self.tools) {
            match (!tool.builtin).then(|| why(&tool)).flatten() {
                Some(refusal) => self.refused.push((tool.name, tool.alias, refusal)),
                None => kept.push(tool),
            }
        }
        self.tools = kept;
    }

    /// The tools of degraded capabilities, out until they recover.
    fn degraded(&mut self, degraded: &[Degraded]) {
        if degraded.is_empty() {
            return;
        }
        self.refuse(|t| {
            degraded
                .iter()
                .find(|d| d.capability == t.server)
                .map(|d| Refusal::Degraded {
                    name: t.name.clone(),
                    reason: d.reason.clone(),
                })
        });
    }

    /// The embedding program's filter: what it removes is refused, what it
    /// adds that the catalog does not have is ignored, its order is kept.
    fn filter(&mut self, filter: &dyn super::CatalogFilter, scope: &Scope) {
        let before: HashMap<String, (String, bool)> = self
            .tools
            .iter()
            .map(|t| (t.name.clone(), (t.alias.clone(), t.builtin)))
            .collect();
        filter.apply(scope, &mut self.tools);
        let mut seen = HashSet::with_capacity(self.tools.len());
        self.tools
            .retain(|t| before.contains_key(&t.name) && seen.insert(t.name.clone()));
        for (name, (alias, builtin)) in before {
            if !seen.contains(&name) && !builtin {
                let refusal = Refusal::Filtered { name: name.clone() };
                self.refused.push((name, alias, refusal));
            }
        }
    }

    /// The rows, each under the name its front end lists it by, and the
    /// tools taken out.
    fn named(self, layers: &Layers, front: &[BuiltinTool]) -> (Vec<Row>, Vec<Taken>) {
        let bare = self.unprefixed(layers, front);
        let rows = self
            .tools
            .into_iter()
            .map(|tool| Row {
                listed: match bare.get(tool.name.as_str()) {
                    Some(own) => own.clone(),
                    None => listed_name(&tool, layers.naming).to_owned(),
                },
                deferrable: false,
                builtin: tool
                    .builtin
                    .then(|| BuiltinTool::named(&tool.name))
                    .flatten(),
                tool,
            })
            .collect();
        (rows, self.refused)
    }

    /// Catalog name → own name of the tools of unprefixed servers listed
    /// under their own names: where it is client-safe and collides with no
    /// name a call resolves, nor another such tool's.
    fn unprefixed(&self, layers: &Layers, front: &[BuiltinTool]) -> HashMap<String, String> {
        if layers.unprefixed.is_empty() {
            return HashMap::new();
        }
        let mut taken: HashSet<&str> = front.iter().map(|b| b.name()).collect();
        taken.insert(BuiltinTool::ToolSearch.name());
        for t in &self.tools {
            taken.insert(&t.name);
            taken.insert(&t.alias);
        }
        for (name, alias, _) in &self.refused {
            taken.insert(name);
            taken.insert(alias);
        }
        names::unprefixed(
            self.tools
                .iter()
                .filter(|t| !t.builtin && layers.unprefixed.contains(&t.server))
                .map(|t| (t.tool.as_str(), t.name.as_str())),
            |own| names::is_client_safe(own) && !taken.contains(own),
        )
        .into_iter()
        .map(|(own, catalog)| (catalog.to_owned(), own.to_owned()))
        .collect()
    }
}

/// The name `naming` lists `tool` by.
fn listed_name(tool: &ModelTool, naming: Naming) -> &str {
    match naming {
        Naming::Client if names::is_client_safe(&tool.name) => &tool.name,
        Naming::Client | Naming::Provider => &tool.alias,
    }
}

/// Marks the rows deferred under `config` (none while their definitions
/// fit in its budget); true when some are.
fn defer(rows: &mut [Row], costs: &[usize], config: &search::DeferralConfig) -> bool {
    let plan = search::plan(rows, costs, config, |_| false);
    for &i in &plan.deferred {
        rows[i].deferrable = true;
    }
    plan.is_deferring()
}

/// The row of a built-in the front end answers.
fn builtin_row(b: BuiltinTool, naming: Naming) -> Row {
    let tool = ModelTool::builtin(b);
    Row {
        listed: listed_name(&tool, naming).to_owned(),
        deferrable: false,
        builtin: Some(b),
        tool,
    }
}

/// Every accepted name: each row's catalog name, alias and listed name,
/// then each refused tool's catalog name and alias.
fn index(rows: &[Row], refused: Vec<Taken>) -> HashMap<Box<str>, Entry> {
    let mut names: HashMap<Box<str>, Entry> =
        HashMap::with_capacity(rows.len() * 2 + refused.len() * 2);
    for (i, row) in rows.iter().enumerate() {
        let i = i as u32;
        for name in [&row.tool.name, &row.tool.alias, &row.listed] {
            names.entry(name.as_str().into()).or_insert(Entry::Row(i));
        }
    }
    for (name, alias, refusal) in refused {
        if alias != name {
            names
                .entry(alias.into_boxed_str())
                .or_insert_with(|| Entry::Refused(refusal.clone()));
        }
        names
            .entry(name.into_boxed_str())
            .or_insert(Entry::Refused(refusal));
    }
    names
}
