//! A serde `Deserializer` over the located tree ([`crate::tree::Node`]).
//!
//! Deserializing through our own deserializer (rather than straight from
//! text with a format crate) is what gives every schema error a position and
//! a path, and lets unknown keys arrive as data (the key plus the list of
//! keys that would have been accepted) instead of as a message to pick apart.
//! Messages never quote the offending value: a misplaced token must not end
//! up in an error.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use crate::tree::{Entry, Node, Pos, Value};

/// A schema error: what went wrong, where, and under which key path.
#[derive(Debug, Clone, PartialEq)]
pub struct DeError {
    /// Position of the offending value or key.
    pub pos: Option<Pos>,
    /// Key path from the document root (`["mcp_servers", "github", "args", "[1]"]`).
    pub path: Vec<String>,
    /// What went wrong.
    pub kind: DeErrorKind,
}

/// The kinds of schema error.
#[derive(Debug, Clone, PartialEq)]
pub enum DeErrorKind {
    /// A key that the schema does not know.
    UnknownKey {
        /// The key as written.
        key: String,
        /// The keys accepted here.
        expected: Vec<&'static str>,
    },
    /// A value that is not one of the allowed names.
    UnknownVariant {
        /// The value as written.
        value: String,
        /// The allowed names.
        expected: Vec<&'static str>,
    },
    /// A required key is absent.
    MissingKey(&'static str),
    /// A value of the wrong type.
    InvalidType {
        /// What was found ("a string", "a sequence").
        found: &'static str,
        /// What the schema wants.
        expected: String,
    },
    /// A value of the right type but out of range.
    InvalidValue {
        /// What the schema wants.
        expected: String,
    },
    /// Anything else.
    Custom(String),
}

impl DeError {
    fn new(kind: DeErrorKind) -> Self {
        Self {
            pos: None,
            path: Vec::new(),
            kind,
        }
    }

    fn at(mut self, pos: Pos) -> Self {
        self.pos.get_or_insert(pos);
        self
    }

    fn within(mut self, segment: String) -> Self {
        self.path.insert(0, segment);
        self
    }

    /// The key path as `a.b[1].c`.
    pub fn path_string(&self) -> String {
        join_path(&self.path)
    }
}

/// Joins path segments: keys with `.`, indexes (`[n]`) glued on.
pub fn join_path(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if !seg.starts_with('[') && !out.is_empty() {
            out.push('.');
        }
        out.push_str(seg);
    }
    out
}

impl fmt::Display for DeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeErrorKind::UnknownKey { key, .. } => write!(f, "unknown key {key:?}"),
            DeErrorKind::UnknownVariant { value, expected } => {
                write!(f, "unknown value {value:?}, expected one of: ")?;
                f.write_str(&expected.join(", "))
            }
            DeErrorKind::MissingKey(key) => write!(f, "missing required key {key:?}"),
            DeErrorKind::InvalidType { found, expected } => {
                write!(f, "expected {expected}, found {found}")
            }
            DeErrorKind::InvalidValue { expected } => write!(f, "expected {expected}"),
            DeErrorKind::Custom(msg) => f.write_str(msg),
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(pos) = self.pos {
            write!(f, "{pos}: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path_string())?;
        }
        self.kind.fmt(f)
    }
}

impl std::error::Error for DeError {}

fn unexpected_kind(u: &de::Unexpected<'_>) -> &'static str {
    use de::Unexpected as U;
    match u {
        U::Bool(_) => "a boolean",
        U::Unsigned(_) | U::Signed(_) => "an integer",
        U::Float(_) => "a number",
        U::Char(_) | U::Str(_) => "a string",
        U::Bytes(_) => "bytes",
        U::Unit | U::Option => "null",
        U::Seq => "a sequence",
        U::Map => "a mapping",
        _ => "a value of another kind",
    }
}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::new(DeErrorKind::Custom(msg.to_string()))
    }

    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Self::new(DeErrorKind::InvalidType {
            found: unexpected_kind(&unexp),
            expected: exp.to_string(),
        })
    }

    fn invalid_value(_unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Self::new(DeErrorKind::InvalidValue {
            expected: exp.to_string(),
        })
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::new(DeErrorKind::UnknownVariant {
            value: variant.to_owned(),
            expected: expected.to_vec(),
        })
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::new(DeErrorKind::UnknownKey {
            key: field.to_owned(),
            expected: expected.to_vec(),
        })
    }

    fn missing_field(field: &'static str) -> Self {
        Self::new(DeErrorKind::MissingKey(field))
    }
}

/// Deserializes a `T` from a located node.
pub fn from_node<'de, T: serde::Deserialize<'de>>(node: &'de Node) -> Result<T, DeError> {
    T::deserialize(NodeDe(node))
}

/// The most schema errors [`from_node_all`] reports for one document.
pub const MAX_SCHEMA_ERRORS: usize = 50;

/// Deserializes a `T`, reporting every schema error, not only the first:
/// after each error the offending key or value is taken out of a copy of
/// the document and the rest is read again (up to [`MAX_SCHEMA_ERRORS`]).
/// A required key that was taken out this way is not reported again as
/// missing.
pub fn from_node_all<T: serde::de::DeserializeOwned>(node: &Node) -> Result<T, Vec<DeError>> {
    match from_node_partial(node) {
        (Some(v), errors) if errors.is_empty() => Ok(v),
        (_, errors) => Err(errors),
    }
}

/// [`from_node_all`], also returning what could be read: the `T` of the
/// document without each key or value an error is about (`None` when an
/// error left nothing to read: a required key missing, a place that cannot
/// be taken out, or more than [`MAX_SCHEMA_ERRORS`]), so a caller can go on
/// checking the rest and report every error of a file at once.
pub fn from_node_partial<T: serde::de::DeserializeOwned>(node: &Node) -> (Option<T>, Vec<DeError>) {
    let mut errors: Vec<DeError> = Vec::new();
    let mut removed = Removed::default();
    let mut doc = std::borrow::Cow::Borrowed(node);
    loop {
        let e = match from_node::<T>(&doc) {
            Ok(v) => return (Some(v), errors),
            Err(e) => e,
        };
        // The copy lost some list items: name the others as written.
        let mut shown = e.clone();
        shown.path = removed.original(&e.path);
        if let DeErrorKind::MissingKey(key) = &e.kind {
            let mut path = shown.path.clone();
            path.push((*key).to_owned());
            if !removed.paths.contains(&path) {
                errors.push(shown);
            }
            return (None, errors);
        }
        let taken = take_out(doc.to_mut(), &e);
        errors.push(shown);
        match taken {
            Some(path) if errors.len() < MAX_SCHEMA_ERRORS => removed.add(path),
            _ => return (None, errors),
        }
    }
}

/// What [`from_node_all`] took out of its copy, by path as written.
#[derive(Default)]
struct Removed {
    paths: Vec<Vec<String>>,
}

fn index_of(seg: &str) -> Option<usize> {
    seg.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

impl Removed {
    /// Records a removal at `path` (in the copy's indexes).
    fn add(&mut self, path: Vec<String>) {
        let original = self.original(&path);
        self.paths.push(original);
    }

    /// Translates a path in the copy (whose lists lost items) into the
    /// document's own indexes.
    fn original(&self, path: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(path.len());
        for seg in path {
            let Some(mut j) = index_of(seg) else {
                out.push(seg.clone());
                continue;
            };
            // Items removed before this one in the same list shift it.
            let mut gone: Vec<usize> = self
                .paths
                .iter()
                .filter(|p| p.len() == out.len() + 1 && p[..out.len()] == out[..])
                .filter_map(|p| index_of(&p[out.len()]))
                .collect();
            gone.sort_unstable();
            for g in gone {
                if g <= j {
                    j += 1;
                }
            }
            out.push(format!("[{j}]"));
        }
        out
    }
}

/// The node at `path` (keys and `[i]` indexes).
fn node_at_mut<'a>(mut node: &'a mut Node, path: &[String]) -> Option<&'a mut Node> {
    for seg in path {
        node = match (
            &mut node.value,
            seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')),
        ) {
            (Value::Seq(items), Some(i)) => items.get_mut(i.parse::<usize>().ok()?)?,
            (Value::Map(entries), None) => &mut entries.iter_mut().find(|e| &e.key == seg)?.value,
            _ => return None,
        };
    }
    Some(node)
}

/// Takes the key or value an error is about out of `root`; returns its
/// path, or `None` when the error is not about one removable place.
fn take_out(root: &mut Node, e: &DeError) -> Option<Vec<String>> {
    let (parent, last) = match &e.kind {
        DeErrorKind::UnknownKey { key, .. } => (e.path.as_slice(), key.clone()),
        _ => {
            let (last, parent) = e.path.split_last()?;
            (parent, last.clone())
        }
    };
    let node = node_at_mut(root, parent)?;
    match (
        &mut node.value,
        last.strip_prefix('[').and_then(|s| s.strip_suffix(']')),
    ) {
        (Value::Seq(items), Some(i)) => {
            let i = i.parse::<usize>().ok().filter(|&i| i < items.len())?;
            items.remove(i);
        }
        (Value::Map(entries), None) => {
            let i = entries.iter().position(|en| en.key == last)?;
            entries.remove(i);
        }
        _ => return None,
    }
    let mut path = parent.to_vec();
    path.push(last);
    Some(path)
}

/// The deserializer for one node.
#[derive(Clone, Copy)]
pub struct NodeDe<'a>(pub &'a Node);

impl NodeDe<'_> {
    fn wrong(&self, expected: &str) -> DeError {
        DeError::new(DeErrorKind::InvalidType {
            found: self.0.value.kind(),
            expected: expected.to_owned(),
        })
        .at(self.0.pos)
    }

    fn int(&self, expected: &str) -> Result<i64, DeError> {
        match &self.0.value {
            Value::Int(n, _) => Ok(*n),
            _ => Err(self.wrong(expected)),
        }
    }
}

macro_rules! deserialize_int {
    ($($method:ident => $ty:ty, $visit:ident, $expected:literal;)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            let n = self.int($expected)?;
            let v = <$ty>::try_from(n).map_err(|_| {
                DeError::new(DeErrorKind::InvalidValue { expected: $expected.to_owned() })
                    .at(self.0.pos)
            })?;
            visitor.$visit(v).map_err(|e: DeError| e.at(self.0.pos))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for NodeDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let pos = self.0.pos;
        match &self.0.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b, _) => visitor.visit_bool(*b),
            Value::Int(n, _) => visitor.visit_i64(*n),
            Value::Float(x, _) => visitor.visit_f64(*x),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::Seq(items) => visitor.visit_seq(SeqDe::new(items)),
            Value::Map(entries) => visitor.visit_map(MapDe::new(entries)),
        }
        .map_err(|e: DeError| e.at(pos))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Bool(b, _) => visitor
                .visit_bool(*b)
                .map_err(|e: DeError| e.at(self.0.pos)),
            _ => Err(self.wrong("true or false")),
        }
    }

    deserialize_int! {
        deserialize_i8 => i8, visit_i8, "an integer";
        deserialize_i16 => i16, visit_i16, "an integer";
        deserialize_i32 => i32, visit_i32, "an integer";
        deserialize_i64 => i64, visit_i64, "an integer";
        deserialize_u8 => u8, visit_u8, "an integer from 0 to 255";
        deserialize_u16 => u16, visit_u16, "an integer from 0 to 65535";
        deserialize_u32 => u32, visit_u32, "a non-negative integer below 2^32";
        deserialize_u64 => u64, visit_u64, "a non-negative integer";
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Float(x, _) => visitor.visit_f64(*x),
            Value::Int(n, _) => visitor.visit_f64(*n as f64),
            _ => return Err(self.wrong("a number")),
        }
        .map_err(|e: DeError| e.at(self.0.pos))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        // Scalars written without quotes still count as strings where a string
        // is expected: `args: [--port, 8080]`, `env: {DEBUG: true}`.
        match &self.0.value {
            Value::Str(s) | Value::Bool(_, s) | Value::Int(_, s) | Value::Float(_, s) => {
                visitor.visit_borrowed_str(s)
            }
            _ => return Err(self.wrong("a string")),
        }
        .map_err(|e: DeError| e.at(self.0.pos))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
        .map_err(|e: DeError| e.at(self.0.pos))
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Null => visitor.visit_unit().map_err(|e: DeError| e.at(self.0.pos)),
            _ => Err(self.wrong("null")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor
            .visit_newtype_struct(self)
            .map_err(|e: DeError| e.at(self.0.pos))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Seq(items) => visitor
                .visit_seq(SeqDe::new(items))
                .map_err(|e: DeError| e.at(self.0.pos)),
            _ => Err(self.wrong("a list")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Map(entries) => visitor
                .visit_map(MapDe::new(entries))
                .map_err(|e: DeError| e.at(self.0.pos)),
            // `env:` with nothing after it is an empty mapping, not an error.
            Value::Null => visitor
                .visit_map(MapDe::new(&[]))
                .map_err(|e: DeError| e.at(self.0.pos)),
            _ => Err(self.wrong("a mapping")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.0.value {
            Value::Str(s) => visitor
                .visit_enum(EnumDe {
                    variant: s,
                    variant_pos: self.0.pos,
                    value: None,
                })
                .map_err(|e: DeError| e.at(self.0.pos)),
            Value::Map(entries) if entries.len() == 1 => {
                let e = &entries[0];
                visitor
                    .visit_enum(EnumDe {
                        variant: &e.key,
                        variant_pos: e.key_pos,
                        value: Some(&e.value),
                    })
                    .map_err(|err: DeError| err.at(self.0.pos))
            }
            _ => Err(self.wrong("one of the allowed names")),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

struct SeqDe<'a> {
    items: &'a [Node],
    next: usize,
}

impl<'a> SeqDe<'a> {
    fn new(items: &'a [Node]) -> Self {
        Self { items, next: 0 }
    }
}

impl<'de> de::SeqAccess<'de> for SeqDe<'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(node) = self.items.get(self.next) else {
            return Ok(None);
        };
        let i = self.next;
        self.next += 1;
        seed.deserialize(NodeDe(node))
            .map(Some)
            .map_err(|e| e.within(format!("[{i}]")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len() - self.next)
    }
}

struct MapDe<'a> {
    entries: &'a [Entry],
    next: usize,
}

impl<'a> MapDe<'a> {
    fn new(entries: &'a [Entry]) -> Self {
        Self { entries, next: 0 }
    }
}

impl<'de> de::MapAccess<'de> for MapDe<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.get(self.next) else {
            return Ok(None);
        };
        seed.deserialize(KeyDe {
            key: &entry.key,
            pos: entry.key_pos,
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let entry = &self.entries[self.next];
        self.next += 1;
        seed.deserialize(NodeDe(&entry.value))
            .map_err(|e| e.within(entry.key.clone()))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len() - self.next)
    }
}

/// Deserializes a mapping key (always a string) and locates errors at the key.
struct KeyDe<'a> {
    key: &'a str,
    pos: Pos,
}

impl<'de> de::Deserializer<'de> for KeyDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor
            .visit_borrowed_str(self.key)
            .map_err(|e: DeError| e.at(self.pos))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct EnumDe<'a> {
    variant: &'a str,
    variant_pos: Pos,
    value: Option<&'a Node>,
}

impl<'de> de::EnumAccess<'de> for EnumDe<'de> {
    type Error = DeError;
    type Variant = VariantDe<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), DeError> {
        let v = seed.deserialize(KeyDe {
            key: self.variant,
            pos: self.variant_pos,
        })?;
        Ok((
            v,
            VariantDe {
                value: self.value,
                pos: self.variant_pos,
            },
        ))
    }
}

struct VariantDe<'a> {
    value: Option<&'a Node>,
    pos: Pos,
}

impl<'de> de::VariantAccess<'de> for VariantDe<'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        match self.value {
            None
            | Some(Node {
                value: Value::Null, ..
            }) => Ok(()),
            Some(node) => Err(NodeDe(node).wrong("nothing after the name")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        match self.value {
            Some(node) => seed.deserialize(NodeDe(node)),
            None => seed
                .deserialize(().into_deserializer())
                .map_err(|e: DeError| e.at(self.pos)),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Some(node) => de::Deserializer::deserialize_seq(NodeDe(node), visitor),
            None => Err(DeError::new(DeErrorKind::InvalidType {
                found: "a name",
                expected: "a list".into(),
            })
            .at(self.pos)),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.value {
            Some(node) => de::Deserializer::deserialize_map(NodeDe(node), visitor),
            None => Err(DeError::new(DeErrorKind::InvalidType {
                found: "a name",
                expected: "a mapping".into(),
            })
            .at(self.pos)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;
    use crate::tree::parse_yaml;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Server {
        command: Option<String>,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        timeout: Option<u32>,
        #[serde(default)]
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Strict,
        Lenient,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        servers: BTreeMap<String, Server>,
        name: String,
    }

    fn load(text: &str) -> Result<Doc, DeError> {
        let node = parse_yaml(text).unwrap();
        from_node(&node)
    }

    #[test]
    fn reads_a_document() {
        let doc = load("name: x\nservers:\n  a:\n    command: npx\n    args: [-y, 8080, true]\n    mode: strict\n").unwrap();
        assert_eq!(doc.servers["a"].args, ["-y", "8080", "true"]);
        assert_eq!(doc.servers["a"].mode, Some(Mode::Strict));
    }

    #[test]
    fn unknown_keys_carry_position_path_and_candidates() {
        let e = load("name: x\nservers:\n  a:\n    comand: npx\n").unwrap_err();
        assert_eq!(e.pos, Some(Pos::new(4, 5)));
        assert_eq!(e.path_string(), "servers.a");
        let DeErrorKind::UnknownKey { key, expected } = &e.kind else {
            panic!("{e:?}")
        };
        assert_eq!(key, "comand");
        assert!(expected.contains(&"command"));
    }

    #[test]
    fn type_errors_name_what_was_expected_without_the_value() {
        let e = load("name: x\nservers:\n  a:\n    args: secret-token\n").unwrap_err();
        assert_eq!(e.pos, Some(Pos::new(4, 11)));
        assert_eq!(e.path_string(), "servers.a.args");
        assert_eq!(e.kind.to_string(), "expected a list, found a string");
        assert!(!e.to_string().contains("secret-token"));

        let e = load("name: x\nservers:\n  a:\n    timeout: -5\n").unwrap_err();
        assert_eq!(e.pos, Some(Pos::new(4, 14)));
        assert!(e.kind.to_string().contains("non-negative"), "{e}");

        let e = load("name: x\nservers:\n  a:\n    args: [a, [b]]\n").unwrap_err();
        assert_eq!(e.path_string(), "servers.a.args[1]");
        assert_eq!(e.pos, Some(Pos::new(4, 15)));
    }

    #[test]
    fn missing_keys_point_at_the_mapping() {
        let e = load("servers: {}\n").unwrap_err();
        assert_eq!(e.kind, DeErrorKind::MissingKey("name"));
        assert_eq!(e.pos, Some(Pos::new(1, 1)));
    }

    #[test]
    fn unknown_enum_values_list_the_choices() {
        let e = load("name: x\nservers:\n  a:\n    mode: strcit\n").unwrap_err();
        assert_eq!(e.pos, Some(Pos::new(4, 11)));
        let DeErrorKind::UnknownVariant { value, expected } = &e.kind else {
            panic!("{e:?}")
        };
        assert_eq!(value, "strcit");
        assert_eq!(expected, &["strict", "lenient"]);
    }
}
