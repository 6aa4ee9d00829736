//! [`Parts`]: the parts of a message, one of them held inline.

use super::Part;
use thin_vec::ThinVec;

/// The parts of a message in stored order, read as a slice of [`Part`]s.
/// None or one part is held in the message itself, more in a `ThinVec`:
/// most messages of a huge session have exactly one (a Codex response
/// item, a Claude Code line of one content block), and a `ThinVec` of one
/// part cost an allocation of the part plus a 16-byte header, rounded up
/// by the allocator (1.14 million of them in the 1 GB rollout of benches/).
#[derive(Clone, Default)]
pub struct Parts(Repr);

#[derive(Clone)]
enum Repr {
    One(Part),
    /// None (no allocation), or two and more.
    Many(ThinVec<Part>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Many(ThinVec::new())
    }
}

impl Parts {
    /// No parts.
    pub fn new() -> Parts {
        Parts::default()
    }

    /// Adds `p` at the end.
    pub fn push(&mut self, p: Part) {
        match &mut self.0 {
            Repr::Many(v) if !v.is_empty() => v.push(p),
            Repr::Many(_) => self.0 = Repr::One(p),
            Repr::One(_) => {
                let mut v = self.take();
                v.push(p);
                *self = Parts::from(v);
            }
        }
    }

    /// Inserts `p` at index `k` (panics past the end, as `Vec::insert`).
    pub fn insert(&mut self, k: usize, p: Part) {
        let mut v = self.take();
        v.insert(k, p);
        *self = Parts::from(v);
    }

    /// Removes and returns the part at index `k` (panics past the end, as
    /// `Vec::remove`).
    pub fn remove(&mut self, k: usize) -> Part {
        let mut v = self.take();
        let p = v.remove(k);
        *self = Parts::from(v);
        p
    }

    /// Keeps the parts `keep` says to keep, in order.
    pub fn retain(&mut self, keep: impl FnMut(&Part) -> bool) {
        let mut v = self.take();
        v.retain(keep);
        *self = Parts::from(v);
    }

    /// Moves every part of `other` to the end of these, leaving it empty.
    pub fn append(&mut self, other: &mut Parts) {
        let mut v = self.take();
        v.extend(other.take());
        *self = Parts::from(v);
    }

    /// Frees room the list holds beyond its parts (a single part moves inline).
    pub fn shrink_to_fit(&mut self) {
        match &mut self.0 {
            Repr::Many(v) if v.len() == 1 => {
                let v = self.take();
                *self = Parts::from(v);
            }
            Repr::Many(v) => v.shrink_to_fit(),
            Repr::One(_) => {}
        }
    }

    /// The parts as a list, leaving none.
    fn take(&mut self) -> ThinVec<Part> {
        match std::mem::take(&mut self.0) {
            Repr::One(p) => {
                let mut v = ThinVec::with_capacity(2);
                v.push(p);
                v
            }
            Repr::Many(v) => v,
        }
    }
}

impl std::ops::Deref for Parts {
    type Target = [Part];
    fn deref(&self) -> &[Part] {
        match &self.0 {
            Repr::One(p) => std::slice::from_ref(p),
            Repr::Many(v) => v,
        }
    }
}

impl std::ops::DerefMut for Parts {
    fn deref_mut(&mut self) -> &mut [Part] {
        match &mut self.0 {
            Repr::One(p) => std::slice::from_mut(p),
            Repr::Many(v) => v,
        }
    }
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<ThinVec<Part>> for Parts {
    /// A list of one part is held inline; its allocation is freed.
    fn from(mut v: ThinVec<Part>) -> Parts {
        if v.len() == 1 {
            if let Some(p) = v.pop() {
                return Parts(Repr::One(p));
            }
        }
        Parts(Repr::Many(v))
    }
}

impl From<Vec<Part>> for Parts {
    fn from(v: Vec<Part>) -> Parts {
        v.into_iter().collect()
    }
}

impl FromIterator<Part> for Parts {
    fn from_iter<I: IntoIterator<Item = Part>>(it: I) -> Parts {
        let mut it = it.into_iter();
        let Some(first) = it.next() else {
            return Parts::new();
        };
        match it.next() {
            None => Parts(Repr::One(first)),
            Some(second) => {
                let mut v = ThinVec::with_capacity(2 + it.size_hint().0);
                v.push(first);
                v.push(second);
                v.extend(it);
                Parts(Repr::Many(v))
            }
        }
    }
}

impl Extend<Part> for Parts {
    fn extend<I: IntoIterator<Item = Part>>(&mut self, it: I) {
        for p in it {
            self.push(p);
        }
    }
}

impl IntoIterator for Parts {
    type Item = Part;
    type IntoIter = thin_vec::IntoIter<Part>;
    fn into_iter(mut self) -> Self::IntoIter {
        self.take().into_iter()
    }
}

impl<'a> IntoIterator for &'a Parts {
    type Item = &'a Part;
    type IntoIter = std::slice::Iter<'a, Part>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Parts {
    type Item = &'a mut Part;
    type IntoIter = std::slice::IterMut<'a, Part>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PartKind;

    fn part(id: &str) -> Part {
        Part::empty(id, PartKind::Text, "text")
    }

    fn ids(p: &Parts) -> Vec<&str> {
        p.iter().map(|p| p.id.as_str()).collect()
    }

    /// Every change keeps the order of a list, and one part is held inline.
    #[test]
    fn parts_behave_as_a_list_and_hold_one_inline() {
        let mut p = Parts::new();
        assert!(p.is_empty());
        p.push(part("a"));
        assert!(matches!(p.0, Repr::One(_)));
        p.push(part("b"));
        p.insert(0, part("z"));
        assert_eq!(ids(&p), ["z", "a", "b"]);
        assert_eq!(p.remove(1).id, "a");
        p.retain(|x| x.id != "z");
        assert_eq!(ids(&p), ["b"]);
        assert!(matches!(p.0, Repr::One(_)));
        let mut q: Parts = vec![part("c"), part("d")].into();
        p.append(&mut q);
        assert!(q.is_empty());
        assert_eq!(ids(&p), ["b", "c", "d"]);
        p[2].id = "e".into();
        let owned: Vec<String> = p.clone().into_iter().map(|x| x.id.to_string()).collect();
        assert_eq!(owned, ["b", "c", "e"]);
        p.retain(|x| x.id == "c");
        p.shrink_to_fit();
        assert!(matches!(p.0, Repr::One(_)));
        let mut one: ThinVec<Part> = ThinVec::new();
        one.push(part("f"));
        assert!(matches!(Parts::from(one).0, Repr::One(_)));
        assert_eq!(format!("{:?}", Parts::new()), "[]");
    }
}
