//! [`Scope`]: which pool, session, agent and turn an operation runs in.
//!
//! Visibility walks pool → session → agent → turn, never the reverse. A
//! registration is keyed by the *whole path* down to its level
//! ([`ScopeKey`]), so an agent named `coder` in session A shares nothing with
//! `coder` in session B, and a turn id cannot be replayed from another session.

use serde::{Deserialize, Serialize};

/// The four visibility levels, outermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeLevel {
    /// Visible to every session of the pool.
    Pool,
    /// Visible to one session.
    Session,
    /// Visible to one agent within one session.
    Agent,
    /// Visible for one turn only.
    Turn,
}

impl ScopeLevel {
    /// All levels, outermost first.
    pub const ALL: [ScopeLevel; 4] = [Self::Pool, Self::Session, Self::Agent, Self::Turn];

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pool => "pool",
            Self::Session => "session",
            Self::Agent => "agent",
            Self::Turn => "turn",
        }
    }
}

impl std::fmt::Display for ScopeLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an operation runs. Empty strings mean "not set".
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// The pool (process-wide registry partition).
    pub pool_id: String,
    /// The session, or empty.
    #[serde(default)]
    pub session_id: String,
    /// The agent, or empty.
    #[serde(default)]
    pub agent_name: String,
    /// The turn, or empty.
    #[serde(default)]
    pub turn_id: String,
}

impl Default for Scope {
    fn default() -> Self {
        Self::pool("default")
    }
}

/// A scope lacks the id a level needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot address the {level} level from a scope without a {field}")]
pub struct ScopeError {
    /// The level that was asked for.
    pub level: ScopeLevel,
    /// The missing field.
    pub field: &'static str,
}

impl Scope {
    /// The pool-level scope.
    pub fn pool(pool_id: impl Into<String>) -> Self {
        Self {
            pool_id: pool_id.into(),
            session_id: String::new(),
            agent_name: String::new(),
            turn_id: String::new(),
        }
    }

    /// This scope narrowed to a session.
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = session_id.into();
        self
    }

    /// This scope narrowed to an agent.
    pub fn agent(mut self, agent_name: impl Into<String>) -> Self {
        self.agent_name = agent_name.into();
        self
    }

    /// This scope narrowed to a turn.
    pub fn turn(mut self, turn_id: impl Into<String>) -> Self {
        self.turn_id = turn_id.into();
        self
    }

    /// The deepest level this scope names.
    pub fn level(&self) -> ScopeLevel {
        if !self.turn_id.is_empty() {
            ScopeLevel::Turn
        } else if !self.agent_name.is_empty() {
            ScopeLevel::Agent
        } else if !self.session_id.is_empty() {
            ScopeLevel::Session
        } else {
            ScopeLevel::Pool
        }
    }

    /// The registration key of this scope at `level`: the path down to it.
    /// Fails when the scope does not name that level.
    pub fn key_at(&self, level: ScopeLevel) -> Result<ScopeKey, ScopeError> {
        let missing = |field| Err(ScopeError { level, field });
        let keep = |s: &str, lvl: ScopeLevel| {
            if level >= lvl {
                s.to_owned()
            } else {
                String::new()
            }
        };
        match level {
            ScopeLevel::Session if self.session_id.is_empty() => return missing("session_id"),
            ScopeLevel::Agent if self.agent_name.is_empty() => return missing("agent_name"),
            ScopeLevel::Turn if self.turn_id.is_empty() => return missing("turn_id"),
            _ => {}
        }
        Ok(ScopeKey {
            level,
            pool_id: self.pool_id.clone(),
            session_id: keep(&self.session_id, ScopeLevel::Session),
            agent_name: keep(&self.agent_name, ScopeLevel::Agent),
            turn_id: keep(&self.turn_id, ScopeLevel::Turn),
        })
    }

    /// The keys visible from this scope, outermost first (1 to 4 of them).
    pub fn visible_keys(&self) -> Vec<ScopeKey> {
        let mut keys = Vec::with_capacity(4);
        for level in ScopeLevel::ALL {
            let named = match level {
                ScopeLevel::Pool => true,
                ScopeLevel::Session => !self.session_id.is_empty(),
                ScopeLevel::Agent => !self.agent_name.is_empty(),
                ScopeLevel::Turn => !self.turn_id.is_empty(),
            };
            if named && let Ok(key) = self.key_at(level) {
                keys.push(key);
            }
        }
        keys
    }
}

/// The identity of one registration slot: a level plus the path down to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ScopeKey {
    /// The level of the slot.
    pub level: ScopeLevel,
    /// Pool id.
    pub pool_id: String,
    /// Session id at session level and below, else empty.
    pub session_id: String,
    /// Agent name at agent level and below, else empty.
    pub agent_name: String,
    /// Turn id at turn level, else empty.
    pub turn_id: String,
}

impl std::fmt::Display for ScopeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.level, self.pool_id)?;
        for part in [&self.session_id, &self.agent_name, &self.turn_id] {
            if !part.is_empty() {
                write!(f, "/{part}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_whole_path() {
        let s = Scope::pool("p").session("A").agent("coder").turn("t1");
        let k = s.key_at(ScopeLevel::Agent).unwrap();
        assert_eq!(k.session_id, "A");
        assert_eq!(k.agent_name, "coder");
        assert_eq!(k.turn_id, "");
        let other = Scope::pool("p").session("B").agent("coder");
        assert_ne!(other.key_at(ScopeLevel::Agent).unwrap(), k);
    }

    #[test]
    fn a_level_the_scope_does_not_name_is_an_error() {
        let s = Scope::pool("p");
        let e = s.key_at(ScopeLevel::Turn).unwrap_err();
        assert_eq!(e.field, "turn_id");
        assert_eq!(s.visible_keys().len(), 1);
        assert_eq!(s.level(), ScopeLevel::Pool);
    }
}
