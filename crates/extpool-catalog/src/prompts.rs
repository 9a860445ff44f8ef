//! Commands: `/mcp__<server>__<prompt> key=value …` (MCP prompts) and the
//! plain commands of other sources, run on a pinned revision.
//!
//! The line is split into words like a shell would (quotes group, a
//! backslash escapes); the words go to the source unchanged, which maps
//! `key=value` and positional words onto the prompt's declared arguments.
//! Prompts can steer the model, so the catalog publishes them only when
//! `prompts` is on, and permission rules apply to their names.

use std::sync::Arc;

use extpool_core::ExtensionError;

use crate::revision::CatalogRevision;

/// Why a command could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The line does not start with `/name`.
    #[error("not a command: {line:?} (commands start with '/')")]
    NotACommand {
        /// The line.
        line: String,
    },
    /// A quote was opened and never closed.
    #[error("unterminated quote starting at byte {position}")]
    UnterminatedQuote {
        /// Byte offset of the opening quote.
        position: usize,
    },
    /// No command has this name in the pinned revision.
    #[error("unknown command /{name}")]
    UnknownCommand {
        /// The name.
        name: String,
    },
    /// Permission rules deny this prompt.
    #[error("command /{name} is denied by {reason}")]
    Denied {
        /// The name.
        name: String,
        /// The deciding rule.
        reason: String,
    },
    /// The source failed or refused the arguments.
    #[error("/{command}: {error}")]
    Source {
        /// The command.
        command: String,
        /// The source id.
        server: String,
        /// The source's error (invalid arguments are
        /// [`ExtensionError::InvalidArgument`]); shown in this message, so not
        /// a `source()`: each cause once.
        error: ExtensionError,
    },
}

impl CommandError {
    /// True when the command does not exist.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Self::UnknownCommand { .. })
    }

    /// True when the source refused the arguments.
    pub fn is_invalid_arguments(&self) -> bool {
        matches!(
            self,
            Self::Source {
                error: ExtensionError::InvalidArgument(_),
                ..
            }
        )
    }
}

/// Splits `/name word "quoted word" key='v w'` into the name and its words.
pub fn parse_command_line(line: &str) -> Result<(String, Vec<String>), CommandError> {
    let trimmed = line.trim_start();
    let offset = line.len() - trimmed.len();
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Err(CommandError::NotACommand {
            line: line.to_owned(),
        });
    };
    let mut words = split_words(rest, offset + 1)?;
    if words.is_empty() || words[0].is_empty() {
        return Err(CommandError::NotACommand {
            line: line.to_owned(),
        });
    }
    let name = words.remove(0);
    Ok((name, words))
}

fn split_words(s: &str, base: usize) -> Result<Vec<String>, CommandError> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            '\'' | '"' => {
                in_word = true;
                let mut closed = false;
                while let Some((_, q)) = chars.next() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    if q == '\\' && c == '"' {
                        if let Some((_, e)) = chars.next() {
                            current.push(e);
                        }
                        continue;
                    }
                    current.push(q);
                }
                if !closed {
                    return Err(CommandError::UnterminatedQuote { position: base + i });
                }
            }
            '\\' => {
                in_word = true;
                if let Some((_, e)) = chars.next() {
                    current.push(e);
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

impl CatalogRevision {
    /// Runs a command line (`/mcp__server__prompt key=value …`) on this
    /// revision and returns the rendered prompt content.
    pub async fn run_command(&self, line: &str) -> Result<String, CommandError> {
        let (name, words) = parse_command_line(line)?;
        self.render_command(&name, &words).await
    }

    /// Renders command `name` (without the `/`) with already-split words.
    pub async fn render_command(
        &self,
        name: &str,
        words: &[String],
    ) -> Result<String, CommandError> {
        let command = self.published_command(name)?;
        let capability = Arc::clone(&command.capability);
        let commands = capability
            .commands()
            .ok_or_else(|| CommandError::UnknownCommand {
                name: name.to_owned(),
            })?;
        commands
            .get_command(&command.original, words)
            .await
            .map_err(|error| CommandError::Source {
                command: name.to_owned(),
                server: command.server.to_string(),
                error,
            })
    }

    /// Gets MCP prompt `name` whole (every message, as MCP's
    /// `GetPromptResult` JSON) with `arguments` by name; `Ok(None)` when
    /// its source has no whole form (a skill's command: render it with
    /// [`CatalogRevision::render_command`]). The same permission rules as
    /// rendering apply.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Option<serde_json::Value>, CommandError> {
        let command = self.published_command(name)?;
        let capability = Arc::clone(&command.capability);
        let Some(commands) = capability.commands() else {
            return Ok(None);
        };
        commands
            .get_prompt(&command.original, arguments)
            .await
            .map_err(|error| CommandError::Source {
                command: name.to_owned(),
                server: command.server.to_string(),
                error,
            })
    }

    /// Command `name` of this revision, or why there is none (unknown, or
    /// denied by a permission rule).
    fn published_command(
        &self,
        name: &str,
    ) -> Result<&crate::revision::CatalogCommand, CommandError> {
        self.command(name).ok_or_else(|| match self.denied(name) {
            Some(d) => CommandError::Denied {
                name: name.to_owned(),
                reason: d.reason(),
            },
            None => CommandError::UnknownCommand {
                name: name.to_owned(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> (String, Vec<String>) {
        parse_command_line(line).unwrap()
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(parse("/mcp__s__p"), ("mcp__s__p".into(), vec![]));
        assert_eq!(
            parse("  /mcp__s__p city=Paris  style=\"very loud\" 'x y' a\\ b"),
            (
                "mcp__s__p".into(),
                vec![
                    "city=Paris".into(),
                    "style=very loud".into(),
                    "x y".into(),
                    "a b".into()
                ]
            )
        );
        assert_eq!(
            parse(r#"/c k="say \"hi\"""#).1,
            vec![r#"k=say "hi""#.to_string()]
        );
        assert_eq!(parse("/c ''").1, vec![String::new()]);
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert!(matches!(
            parse_command_line("no slash"),
            Err(CommandError::NotACommand { .. })
        ));
        assert!(matches!(
            parse_command_line("/"),
            Err(CommandError::NotACommand { .. })
        ));
        match parse_command_line("/c key=\"open") {
            Err(CommandError::UnterminatedQuote { position }) => assert_eq!(position, 7),
            other => panic!("{other:?}"),
        }
    }
}
