//! How large a jq value is: an estimate of its memory, with structure that
//! is shared counted once per use, as if it were copied.
//!
//! `[., .]` forty times is forty small arrays in memory, but 2^40 leaves
//! for anything that walks it (`tojson`, `==`, `sort`): the walk costs
//! what the copy would. So a value's size is the size of its copy. A
//! measure walks each distinct container once (a memo keyed by the
//! container's allocation remembers sizes already known) and stops as soon
//! as the running total passes the limit it was given, so measuring never
//! costs more than the limit allows, whatever the value.
//!
//! The memo holds a weak reference to each container it remembers. While
//! one exists, the allocation is neither freed nor changed in place
//! (`Rc::make_mut` moves a value that has weak references instead of
//! mutating it), so a remembered size cannot go stale.

use std::collections::HashMap;
use std::rc::{Rc, Weak};

use jaq_json::{Map, Num, Val};

/// One value slot (`size_of::<Val>()`).
pub(super) const SLOT: usize = 16;
/// A string's boxed header, beyond its bytes.
pub(super) const STR: usize = 32;
/// An array's reference-counted header.
pub(super) const ARR: usize = 40;
/// An object's reference-counted header.
pub(super) const OBJ: usize = 72;
/// Each object entry's hash and index, beyond its key and value.
pub(super) const ENTRY: usize = 24;
/// Containers at least this large are remembered (smaller ones are cheap to walk again).
const MEMO_MIN: usize = 1024;
/// Remembered containers, at most (then dead ones are dropped, or all).
const MEMO_MAX: usize = 1 << 16;

/// The size and nesting depth of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measure {
    /// Bytes, shared parts counted as copies.
    pub(crate) bytes: usize,
    /// Nesting depth: 0 for a scalar, 1 for a flat container.
    pub(crate) depth: usize,
}

/// Why a measure stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Over {
    /// The size passed the limit.
    Size,
    /// The nesting passed the limit.
    Depth,
}

enum Held {
    Arr(Weak<Vec<Val>>),
    Obj(Weak<Map>),
}

impl Held {
    fn alive(&self) -> bool {
        match self {
            Held::Arr(w) => w.strong_count() > 0,
            Held::Obj(w) => w.strong_count() > 0,
        }
    }
}

/// Sizes already known, by container allocation.
#[derive(Default)]
pub(super) struct Sizes {
    memo: HashMap<usize, (Held, Measure)>,
}

/// The memo key of a container, if `v` is one.
fn key(v: &Val) -> Option<usize> {
    match v {
        Val::Arr(a) => Some(Rc::as_ptr(a) as usize),
        Val::Obj(o) => Some(Rc::as_ptr(o).cast::<u8>() as usize),
        _ => None,
    }
}

/// The cost of a value without its children.
pub(super) fn own_size(v: &Val) -> usize {
    SLOT + match v {
        Val::Null | Val::Bool(_) => 0,
        Val::Num(Num::Int(_) | Num::Float(_)) => 0,
        Val::Num(Num::BigInt(i)) => usize::try_from(i.bits() / 8).unwrap_or(usize::MAX),
        Val::Num(Num::Dec(d)) => d.len(),
        Val::TStr(b) | Val::BStr(b) => STR + b.len(),
        Val::Arr(_) => ARR,
        Val::Obj(o) => OBJ + ENTRY * o.len(),
    }
}

/// A container being walked: the running total when it was entered, and
/// its children not yet visited.
struct Frame<'v> {
    val: &'v Val,
    start: usize,
    next: usize,
    deepest: usize,
}

impl<'v> Frame<'v> {
    fn new(val: &'v Val, start: usize) -> Self {
        Self {
            val,
            start,
            next: 0,
            deepest: 0,
        }
    }

    /// The `i`th child (object keys and values alternate).
    fn child(&self, i: usize) -> Option<&'v Val> {
        match self.val {
            Val::Arr(a) => a.get(i),
            Val::Obj(o) => o
                .get_index(i / 2)
                .map(|(k, v)| if i.is_multiple_of(2) { k } else { v }),
            _ => None,
        }
    }
}

impl Sizes {
    /// The known measure of a container, if it is remembered.
    fn known(&self, v: &Val) -> Option<Measure> {
        let k = key(v)?;
        let (held, m) = self.memo.get(&k)?;
        // A live weak reference at this address is this allocation, unchanged.
        held.alive().then_some(*m)
    }

    /// Remembers the measure of a container (large ones only).
    pub(super) fn remember(&mut self, v: &Val, m: Measure) {
        if m.bytes < MEMO_MIN {
            return;
        }
        let (Some(k), held) = (
            key(v),
            match v {
                Val::Arr(a) => Held::Arr(Rc::downgrade(a)),
                Val::Obj(o) => Held::Obj(Rc::downgrade(o)),
                _ => return,
            },
        ) else {
            return;
        };
        if self.memo.len() >= MEMO_MAX {
            self.memo.retain(|_, (h, _)| h.alive());
            if self.memo.len() >= MEMO_MAX / 2 {
                self.memo.clear();
            }
        }
        self.memo.insert(k, (held, m));
    }

    /// Forgets a container, so that it can be changed in place.
    pub(super) fn forget(&mut self, v: &Val) {
        if let Some(k) = key(v) {
            self.memo.remove(&k);
        }
    }

    /// Adds one node to the running total: a scalar or a remembered
    /// container at once (its depth is returned), another container by its
    /// own cost (`None`: walk its children).
    fn visit(
        &self,
        node: &Val,
        nesting: usize,
        running: &mut usize,
        (limit, max_depth): (usize, usize),
    ) -> Result<Option<usize>, Over> {
        let (bytes, depth) = match (node, self.known(node)) {
            (_, Some(m)) => (m.bytes, Some(m.depth)),
            (Val::Arr(_) | Val::Obj(_), None) => (own_size(node), None),
            _ => (own_size(node), Some(0)),
        };
        *running = running.saturating_add(bytes);
        if *running > limit {
            return Err(Over::Size);
        }
        if nesting + depth.unwrap_or(1) > max_depth {
            return Err(Over::Depth);
        }
        Ok(depth)
    }

    /// Measures `v`, stopping once it is larger than `limit` bytes or deeper
    /// than `max_depth`. `visited` counts the nodes walked (the work done).
    pub(super) fn measure(
        &mut self,
        v: &Val,
        limit: usize,
        max_depth: usize,
        visited: &mut u64,
    ) -> Result<Measure, Over> {
        let mut running = 0usize;
        let mut stack: Vec<Frame<'_>> = Vec::new();
        let bounds = (limit, max_depth);
        *visited += 1;
        if let Some(depth) = self.visit(v, 0, &mut running, bounds)? {
            return Ok(Measure {
                bytes: running,
                depth,
            });
        }
        stack.push(Frame::new(v, 0));
        loop {
            let Some(top) = stack.last_mut() else {
                unreachable!("the root frame is popped last");
            };
            match top.child(top.next) {
                Some(child) => {
                    top.next += 1;
                    let before = running;
                    *visited += 1;
                    match self.visit(child, stack.len(), &mut running, bounds)? {
                        Some(depth) => {
                            if let Some(top) = stack.last_mut() {
                                top.deepest = top.deepest.max(depth + 1);
                            }
                        }
                        None => stack.push(Frame::new(child, before)),
                    }
                }
                None => {
                    let Some(done) = stack.pop() else {
                        unreachable!("a frame was on the stack");
                    };
                    let m = Measure {
                        bytes: running - done.start,
                        depth: done.deepest.max(1),
                    };
                    self.remember(done.val, m);
                    match stack.last_mut() {
                        Some(parent) => parent.deepest = parent.deepest.max(m.depth + 1),
                        None => return Ok(m),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(xs: Vec<Val>) -> Val {
        Val::Arr(Rc::new(xs))
    }

    fn measure(v: &Val, limit: usize) -> Result<Measure, Over> {
        Sizes::default().measure(v, limit, 1000, &mut 0)
    }

    #[test]
    fn scalars_and_flat_containers() {
        assert_eq!(measure(&Val::Null, 100).unwrap().bytes, SLOT);
        let s = Val::utf8_str("abc");
        assert_eq!(measure(&s, 100).unwrap().bytes, SLOT + STR + 3);
        let a = arr(vec![Val::Null, Val::Null]);
        assert_eq!(
            measure(&a, 1000).unwrap(),
            Measure {
                bytes: SLOT + ARR + 2 * SLOT,
                depth: 1
            }
        );
        assert_eq!(measure(&arr(vec![]), 1000).unwrap().depth, 1);
    }

    #[test]
    fn shared_parts_count_as_copies_and_the_walk_stops_at_the_limit() {
        let mut v = arr(vec![Val::Null]);
        for _ in 0..60 {
            v = arr(vec![v.clone(), v]);
        }
        let mut visited = 0;
        let err = Sizes::default().measure(&v, 1 << 20, 1000, &mut visited);
        assert_eq!(err, Err(Over::Size));
        // The memo makes the walk linear in distinct containers.
        assert!(visited < 10_000, "{visited} nodes visited");
    }

    #[test]
    fn a_remembered_size_survives_only_with_its_allocation() {
        let mut sizes = Sizes::default();
        let big = arr((0..200).map(|_| Val::Null).collect());
        let m = sizes.measure(&big, usize::MAX, 1000, &mut 0).unwrap();
        assert_eq!(sizes.known(&big), Some(m));
        let Val::Arr(mut rc) = big else {
            unreachable!()
        };
        // A change moves the array (a weak reference exists), so the old
        // entry does not describe the new value.
        Rc::make_mut(&mut rc).push(Val::Bool(true));
        let changed = Val::Arr(rc);
        assert_eq!(sizes.known(&changed), None);
        let m2 = sizes.measure(&changed, usize::MAX, 1000, &mut 0).unwrap();
        assert_eq!(m2.bytes, m.bytes + SLOT);
    }

    #[test]
    fn depth_is_bounded() {
        let mut v = Val::Null;
        for _ in 0..50 {
            v = arr(vec![v]);
        }
        assert_eq!(measure(&v, usize::MAX).unwrap().depth, 50);
        assert_eq!(
            Sizes::default().measure(&v, usize::MAX, 20, &mut 0),
            Err(Over::Depth)
        );
    }
}
