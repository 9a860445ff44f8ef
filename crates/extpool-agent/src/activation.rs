//! A skill activated for one turn (RFC scope "Turn: dynamically activated
//! skills"): a turn-level capability whose `before_model_request` injects
//! the skill's full instructions into every model request of that turn, in
//! the same `<skill_content>` form the skill manager uses for matched and
//! always-active skills. It is registered on the turn's view, so it is
//! unregistered when the turn ends and never seen by another turn.

use async_trait::async_trait;
use extpool_host::core::TurnContext;
use extpool_host::{Capability, CapabilityKind, ExtensionError};

/// The instructions of one skill, injected for one turn.
pub(crate) struct SkillActivation {
    id: String,
    content: String,
}

impl SkillActivation {
    /// The activation of skill `name`, whose SKILL.md at `uri` has `body`.
    pub(crate) fn new(name: &str, uri: &str, body: &str) -> Self {
        Self {
            id: format!("skill-activation:{name}"),
            content: extpool_host::skills::skill_content(name, uri, body),
        }
    }
}

#[async_trait]
impl Capability for SkillActivation {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> CapabilityKind {
        CapabilityKind::Commands
    }

    async fn before_model_request(&self, ctx: &mut TurnContext) -> Result<(), ExtensionError> {
        ctx.inject_system(self.content.clone());
        Ok(())
    }
}
