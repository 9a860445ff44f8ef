//! The per-run budget every native shares: steps, time, stack, work, the
//! size of each value and the total built.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

use jaq_json::{Num, Val};

use super::size::{ENTRY, Measure, OBJ, Over, SLOT, Sizes};

/// Deepest value a filter may build (jaq compares, prints and drops values
/// recursively; this keeps those walks far from the end of the stack).
pub(crate) const MAX_VALUE_DEPTH: usize = 10_000;
/// Units of work each step allows (a unit is a node visited or compared,
/// or a few bytes scanned).
pub(crate) const WORK_PER_STEP: u64 = 256;
/// The clock is read at least every this many units of work.
const CLOCK_EVERY: u64 = 1 << 16;

/// Why the budget tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trip {
    /// The step budget ran out.
    Steps,
    /// The deadline passed.
    Time,
    /// The evaluation recursed too deeply.
    Stack,
    /// A value would be larger than the value limit.
    Value,
    /// A value would nest deeper than [`MAX_VALUE_DEPTH`].
    Depth,
    /// The values built in total passed their limit.
    Built,
    /// Walking and comparing values took more work than allowed.
    Work,
}

/// The limits a [`Budget`] enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) max_steps: u64,
    pub(crate) deadline: Instant,
    pub(crate) max_stack: usize,
    pub(crate) max_value_bytes: usize,
    pub(crate) max_built_bytes: usize,
}

/// The per-run budget, shared by every native through the context data.
pub(crate) struct Budget {
    bounds: Bounds,
    steps: Cell<u64>,
    stack_base: usize,
    /// The largest value allowed: the value limit, or the input if larger.
    cap: Cell<usize>,
    max_int_bits: u64,
    /// Bytes of values built so far (never decreases).
    built: Cell<usize>,
    max_built: Cell<usize>,
    work: Cell<u64>,
    next_clock: Cell<u64>,
    tripped: Cell<Option<Trip>>,
    sizes: RefCell<Sizes>,
    /// Updates in progress, by handle.
    updates: RefCell<HashMap<u64, Update>>,
    next_update: Cell<u64>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("steps", &self.steps.get())
            .field("work", &self.work.get())
            .field("built", &self.built.get())
            .field("tripped", &self.tripped.get())
            .finish_non_exhaustive()
    }
}

/// An update in progress (`l |= f`): what its root will measure.
#[derive(Debug, Clone, Copy)]
struct Update {
    root: Measure,
    /// Steps when the last part was written (or the update began): the
    /// path to the next part is at most as long as the steps taken to walk
    /// it, plus the parts written in the filter.
    steps: u64,
    written_parts: usize,
    /// The length of the path to the part being replaced.
    path: usize,
}

/// The address of a local: how deep the evaluation thread's stack is.
#[inline(always)]
fn stack_position() -> usize {
    let probe = 0u8;
    std::hint::black_box(std::ptr::addr_of!(probe)) as usize
}

/// The error every tripped check raises; the caller reads the cause from the budget.
pub(crate) type JqErr = jaq_core::Error<Val>;

impl Budget {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            steps: Cell::new(0),
            stack_base: stack_position(),
            cap: Cell::new(bounds.max_value_bytes),
            max_int_bits: (bounds.max_value_bytes as u64)
                .saturating_mul(8)
                .min(1 << 20),
            built: Cell::new(0),
            max_built: Cell::new(bounds.max_built_bytes),
            work: Cell::new(0),
            next_clock: Cell::new(CLOCK_EVERY),
            tripped: Cell::new(None),
            sizes: RefCell::new(Sizes::default()),
            updates: RefCell::new(HashMap::new()),
            next_update: Cell::new(0),
        }
    }

    /// Measures the input once: a filter may always walk what it was given,
    /// so the value limit is at least the input's size, and the total it may
    /// build at least four times that.
    pub(crate) fn admit_input(&self, input: &Val) {
        let mut visited = 0;
        let m = self
            .sizes
            .borrow_mut()
            .measure(input, usize::MAX, usize::MAX, &mut visited);
        if let Ok(m) = m {
            self.cap.set(self.cap.get().max(m.bytes));
            self.max_built
                .set(self.max_built.get().max(m.bytes.saturating_mul(4)));
        }
    }

    pub(crate) fn tripped(&self) -> Option<Trip> {
        self.tripped.get()
    }

    pub(crate) fn steps(&self) -> u64 {
        self.steps.get()
    }

    /// The total the filter may build.
    pub(crate) fn max_built(&self) -> usize {
        self.max_built.get()
    }

    /// The largest value allowed.
    pub(crate) fn cap(&self) -> usize {
        self.cap.get()
    }

    pub(crate) fn max_int_bits(&self) -> u64 {
        self.max_int_bits
    }

    /// Trips the budget (the first cause sticks) and returns the error to raise.
    pub(crate) fn trip(&self, why: Trip) -> JqErr {
        if self.tripped.get().is_none() {
            self.tripped.set(Some(why));
        }
        jaq_core::Error::str("extpool: jq budget exhausted")
    }

    fn check_clock(&self) -> Result<(), JqErr> {
        if Instant::now() >= self.bounds.deadline {
            return Err(self.trip(Trip::Time));
        }
        Ok(())
    }

    /// One step: count, check time, stack and the shallow size of `v`.
    pub(crate) fn tick(&self, v: &Val) -> Result<(), JqErr> {
        if let Some(why) = self.tripped.get() {
            return Err(self.trip(why));
        }
        let n = self.steps.get() + 1;
        self.steps.set(n);
        if n > self.bounds.max_steps {
            return Err(self.trip(Trip::Steps));
        }
        if n.is_multiple_of(256) {
            self.check_clock()?;
        }
        if self.stack_base.abs_diff(stack_position()) > self.bounds.max_stack {
            return Err(self.trip(Trip::Stack));
        }
        if shallow_size(v) > self.cap.get() {
            return Err(self.trip(Trip::Value));
        }
        Ok(())
    }

    /// Spends `units` of work (nodes walked, bytes scanned); reads the clock
    /// every so often, so a long walk still meets the deadline.
    pub(crate) fn work(&self, units: u64) -> Result<(), JqErr> {
        if let Some(why) = self.tripped.get() {
            return Err(self.trip(why));
        }
        let w = self.work.get().saturating_add(units);
        self.work.set(w);
        if w > self.bounds.max_steps.saturating_mul(WORK_PER_STEP) {
            return Err(self.trip(Trip::Work));
        }
        if w >= self.next_clock.get() {
            self.next_clock.set(w.saturating_add(CLOCK_EVERY));
            self.check_clock()?;
        }
        Ok(())
    }

    /// Counts `bytes` of newly built values against the total.
    pub(crate) fn build(&self, bytes: usize) -> Result<(), JqErr> {
        let b = self.built.get().saturating_add(bytes);
        self.built.set(b);
        if b > self.max_built.get() {
            return Err(self.trip(Trip::Built));
        }
        Ok(())
    }

    /// Refuses a value of `bytes` and `depth` that would pass the limits.
    pub(crate) fn admit(&self, bytes: usize, depth: usize) -> Result<(), JqErr> {
        if bytes > self.cap.get() {
            return Err(self.trip(Trip::Value));
        }
        if depth > MAX_VALUE_DEPTH {
            return Err(self.trip(Trip::Depth));
        }
        Ok(())
    }

    /// Measures `v` (shared parts as copies), refusing it past the limits.
    /// The walk is work, and never goes further than the limit.
    pub(crate) fn measure(&self, v: &Val) -> Result<Measure, JqErr> {
        if let Some(why) = self.tripped.get() {
            return Err(self.trip(why));
        }
        let mut visited = 0;
        let m = self
            .sizes
            .borrow_mut()
            .measure(v, self.cap.get(), MAX_VALUE_DEPTH, &mut visited);
        self.work(visited)?;
        m.map_err(|over| {
            self.trip(match over {
                Over::Size => Trip::Value,
                Over::Depth => Trip::Depth,
            })
        })
    }

    /// Remembers the measure of a value just built.
    pub(crate) fn remember(&self, v: &Val, m: Measure) {
        self.sizes.borrow_mut().remember(v, m);
    }

    /// Forgets `v`, so that a change can happen in place.
    pub(crate) fn forget(&self, v: &Val) {
        self.sizes.borrow_mut().forget(v);
    }

    /// Starts tracking an update of `root`, whose path expression has
    /// `written_parts` path parts in the filter; returns its handle.
    pub(crate) fn begin_update(&self, root: Measure, written_parts: usize) -> u64 {
        let id = self.next_update.get();
        self.next_update.set(id + 1);
        let update = Update {
            root,
            steps: self.steps.get(),
            written_parts,
            path: written_parts,
        };
        self.updates.borrow_mut().insert(id, update);
        id
    }

    /// An update reached a part to replace: the path to it is now known.
    pub(crate) fn reach_update(&self, id: u64) {
        let steps = self.steps.get();
        if let Some(u) = self.updates.borrow_mut().get_mut(&id) {
            let walked = usize::try_from(steps.saturating_sub(u.steps)).unwrap_or(usize::MAX);
            u.path = u.written_parts.saturating_add(walked);
        }
    }

    /// One part of an update replaced `old` bytes (`None`: a null, perhaps
    /// a part that did not exist) by the value `new`: the root grows by the
    /// difference, and may nest as deep as the path plus the new part.
    pub(crate) fn grow_update(
        &self,
        id: u64,
        old: Option<usize>,
        new: Measure,
    ) -> Result<(), JqErr> {
        let mut updates = self.updates.borrow_mut();
        let Some(u) = updates.get_mut(&id) else {
            return Ok(());
        };
        let path = u.path;
        u.steps = self.steps.get();
        // A part that did not exist may have created every container on its path.
        let created = match old {
            Some(_) => 0,
            None => path.saturating_mul(SLOT + OBJ + ENTRY),
        };
        u.root.bytes = u
            .root
            .bytes
            .saturating_sub(old.unwrap_or(SLOT))
            .saturating_add(new.bytes)
            .saturating_add(created);
        u.root.depth = u.root.depth.max(new.depth.saturating_add(path));
        let root = u.root;
        drop(updates);
        self.build(created)?;
        self.admit(root.bytes, root.depth)
    }

    /// Ends an update: what its root measures, when it was tracked.
    pub(crate) fn end_update(&self, id: u64) -> Option<Measure> {
        self.updates.borrow_mut().remove(&id).map(|u| u.root)
    }
}

/// A cheap (O(1)) lower bound of a value's size.
pub(crate) fn shallow_size(v: &Val) -> usize {
    match v {
        Val::TStr(b) | Val::BStr(b) => b.len(),
        Val::Arr(a) => a.len().saturating_mul(SLOT),
        Val::Obj(o) => o.len().saturating_mul(SLOT * 2),
        _ => 0,
    }
}

/// Bits of an integer (0 for other values).
pub(crate) fn int_bits(v: &Val) -> u64 {
    match v {
        Val::Num(Num::BigInt(i)) => i.bits(),
        Val::Num(Num::Int(_)) => 64,
        _ => 0,
    }
}
