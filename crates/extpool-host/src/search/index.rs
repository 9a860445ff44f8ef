//! The ranking of tool search: BM25F over a tool's name, description,
//! argument names and argument descriptions. The same query always ranks
//! the same way; the index is built once per toolset and searching it costs
//! one pass over the postings of the query's terms.

use std::collections::HashMap;

use serde_json::Value;

use super::{MAX_QUERY_BYTES, MAX_QUERY_TERMS, MAX_RESULTS, SearchableTool};

/// Words too common to rank by.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for",
    "from", "how", "i", "in", "into", "is", "it", "its", "let", "me", "my", "of", "on", "or",
    "our", "please", "should", "so", "some", "that", "the", "their", "them", "then", "this", "to",
    "tool", "us", "via", "want", "we", "what", "when", "where", "which", "with", "would", "you",
    "your",
];

/// Reduces a lower-case word to a stem shared by its usual inflections
/// (`issues` → `issu`, `creating` / `created` / `create` → `creat`).
fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        w.truncate(n - 3);
        w.push('y');
    } else if n > 4 && w.ends_with("sses") {
        w.truncate(n - 2);
    } else if n > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w.truncate(n - 1);
    }
    let n = w.len();
    if n > 6 && w.ends_with("ing") {
        w.truncate(n - 3);
    } else if n > 4 && w.ends_with("ed") {
        w.truncate(n - 2);
    }
    let n = w.len();
    if n > 4 && w.ends_with('e') {
        w.truncate(n - 1);
    }
    w
}

/// The terms of `text`: split on anything but letters and digits and at
/// lower-to-upper case changes (`ListMcpResources`), lower-cased, stop
/// words dropped, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let lower = word.to_lowercase();
            if !STOPWORDS.contains(&lower.as_str()) {
                out.push(stem(&lower));
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                flush(&mut word, &mut out);
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            prev_lower = false;
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The fields of a tool, and their weights (BM25F): its name counts most,
/// then its description; argument names and descriptions count least
/// (they mostly repeat the name: `issue_id`, `repo`).
const FIELDS: usize = 4;
const WEIGHTS: [f32; FIELDS] = [3.0, 1.5, 0.5, 0.5];
/// BM25 saturation and (per field) length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Most argument properties read per tool (a schema is outside input).
const MAX_ARGS: usize = 64;

/// The name's words: `mcp__github__create_issue` → `github create issue`.
fn name_text(name: &str) -> &str {
    extpool_catalog::names::without_prefix(name)
}

/// Argument names and descriptions of a schema's top-level properties.
fn arguments(schema: &Value) -> (String, String) {
    let mut names = String::new();
    let mut descriptions = String::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props.iter().take(MAX_ARGS) {
            names.push_str(name);
            names.push(' ');
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                descriptions.push_str(d);
                descriptions.push(' ');
            }
        }
    }
    (names, descriptions)
}

/// A ranked keyword index over tools: BM25F over four fields (name,
/// description, argument names, argument descriptions), each normalised by
/// its own length, so a tool with many arguments is not penalised for
/// them. Built once per toolset.
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    /// Term → (document, term frequency per field).
    postings: HashMap<String, Vec<(u32, [f32; FIELDS])>>,
    /// Length of each field of each document, in terms.
    lengths: Vec<[f32; FIELDS]>,
    avg: [f32; FIELDS],
    /// The tool index of each document.
    docs: Vec<usize>,
}

impl ToolIndex {
    /// Indexes `tools[i]` for each `i` in `subset` (the deferred ones).
    pub fn build<T: SearchableTool>(tools: &[T], subset: &[usize]) -> Self {
        let mut index = Self::default();
        let mut counts: HashMap<String, [f32; FIELDS]> = HashMap::new();
        for &i in subset {
            let Some(tool) = tools.get(i) else { continue };
            let doc = index.docs.len() as u32;
            counts.clear();
            let (arg_names, arg_descriptions) = arguments(tool.input_schema());
            let mut lengths = [0.0; FIELDS];
            let fields = [
                name_text(tool.name()),
                tool.description(),
                arg_names.as_str(),
                arg_descriptions.as_str(),
            ];
            for (f, text) in fields.into_iter().enumerate() {
                for term in terms(text) {
                    counts.entry(term).or_default()[f] += 1.0;
                    lengths[f] += 1.0;
                }
            }
            for (term, tf) in counts.drain() {
                index.postings.entry(term).or_default().push((doc, tf));
            }
            index.lengths.push(lengths);
            index.docs.push(i);
        }
        let n = index.docs.len().max(1) as f32;
        for f in 0..FIELDS {
            index.avg[f] = index.lengths.iter().map(|l| l[f]).sum::<f32>() / n;
        }
        index
    }

    /// Number of tools indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The weighted, length-normalised frequency of a term in a document.
    fn weighted(&self, doc: u32, tf: &[f32; FIELDS]) -> f32 {
        let lengths = &self.lengths[doc as usize];
        (0..FIELDS)
            .filter(|&f| tf[f] > 0.0 && self.avg[f] > 0.0)
            .map(|f| WEIGHTS[f] * tf[f] / (1.0 - B + B * lengths[f] / self.avg[f]))
            .sum()
    }

    /// The tools best matching `query`, best first (indices into the slice
    /// the index was built from); at most `limit`, only tools that match
    /// at least one term. Ties go to the earlier tool.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let mut end = query.len().min(MAX_QUERY_BYTES);
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        let mut seen: Vec<String> = Vec::new();
        for term in terms(&query[..end]) {
            if !seen.contains(&term) && seen.len() < MAX_QUERY_TERMS {
                seen.push(term);
            }
        }
        let n = self.docs.len() as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for term in &seen {
            let Some(postings) = self.postings.get(term) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (doc, tf) in postings {
                let tf = self.weighted(*doc, tf);
                *scores.entry(*doc).or_default() += idf * tf * (K1 + 1.0) / (tf + K1);
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
            .into_iter()
            .take(limit.min(MAX_RESULTS))
            .map(|(doc, _)| self.docs[doc as usize])
            .collect()
    }
}
