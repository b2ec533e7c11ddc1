//! Sets of byte ranges: which parts of a buffer a device's copy holds
//! current (see `core::memory::Copies`).

/// Disjoint, non-adjacent half-open ranges `[start, end)`, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    /// The set holding `[start, end)` alone (empty where `start >= end`).
    pub fn of(start: u64, end: u64) -> Ranges {
        let mut r = Ranges::default();
        r.insert(start, end);
        r
    }

    /// Adds `[start, end)`, merging with what it touches.
    pub fn insert(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        let mut kept = Vec::with_capacity(self.0.len() + 1);
        for &(a, b) in &self.0 {
            if b < start || a > end {
                kept.push((a, b));
            } else {
                start = start.min(a);
                end = end.max(b);
            }
        }
        let at = kept.partition_point(|&(a, _)| a < start);
        kept.insert(at, (start, end));
        self.0 = kept;
    }

    /// Takes `[start, end)` out.
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let mut kept = Vec::with_capacity(self.0.len() + 1);
        for &(a, b) in &self.0 {
            if b <= start || a >= end {
                kept.push((a, b));
                continue;
            }
            if a < start {
                kept.push((a, start));
            }
            if b > end {
                kept.push((end, b));
            }
        }
        self.0 = kept;
    }

    /// The parts of `[start, end)` inside the set, in order.
    pub fn within(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        self.0
            .iter()
            .map(|&(a, b)| (a.max(start), b.min(end)))
            .filter(|&(a, b)| a < b)
            .collect()
    }

    /// The parts of `[start, end)` outside the set, in order.
    pub fn missing(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        for (a, b) in self.within(start, end) {
            if a > at {
                out.push((at, a));
            }
            at = b;
        }
        if at < end {
            out.push((at, end));
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_merge_and_removals_split() {
        let mut r = Ranges::of(0, 10);
        r.insert(20, 30);
        r.insert(10, 12);
        assert_eq!(r.0, [(0, 12), (20, 30)]);
        r.insert(11, 25);
        assert_eq!(r.0, [(0, 30)]);
        r.remove(5, 8);
        assert_eq!(r.0, [(0, 5), (8, 30)]);
        r.remove(0, 100);
        assert!(r.is_empty());
        r.insert(7, 7);
        assert!(r.is_empty());
    }

    #[test]
    fn within_and_missing_cover_the_range_between_them() {
        let mut r = Ranges::of(10, 20);
        r.insert(30, 40);
        assert_eq!(r.within(15, 35), [(15, 20), (30, 35)]);
        assert_eq!(r.missing(15, 35), [(20, 30)]);
        assert_eq!(r.missing(0, 50), [(0, 10), (20, 30), (40, 50)]);
        assert_eq!(r.missing(12, 18), []);
        assert_eq!(Ranges::default().missing(3, 9), [(3, 9)]);
    }
}
