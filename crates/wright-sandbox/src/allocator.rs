//! The QuickJS heap's allocator: rquickjs's Rust allocator plus our own accounting, so that
//! "out of memory" is known for certain rather than guessed from what QuickJS throws (often a
//! bare `null`, indistinguishable from `throw null`).
//!
//! The memory limit is enforced here, not by `JS_SetMemoryLimit`: QuickJS checks its limit
//! before calling the allocator, so a refusal there would never be seen. Every refusal sets
//! [`Accounting::refused`], which the engine reads after the call.

// `rquickjs::allocator::Allocator` is an unsafe trait: QuickJS trusts the pointers it returns.
// All pointer work is delegated to `RustAllocator`; this module only adds and subtracts sizes.
#![allow(unsafe_code)]

use rquickjs::allocator::{Allocator, RustAllocator};
use std::cell::Cell;
use std::rc::Rc;

/// Shared between the allocator (inside the runtime) and the engine. Single-threaded.
#[derive(Debug, Default)]
pub(crate) struct Accounting {
    pub(crate) limit: Cell<usize>,
    pub(crate) used: Cell<usize>,
    /// An allocation was refused since this was last cleared.
    pub(crate) refused: Cell<bool>,
}

impl Accounting {
    fn admit(&self, more: usize, less: usize) -> bool {
        let wanted = self.used.get().saturating_sub(less).saturating_add(more);
        if wanted > self.limit.get() {
            self.refused.set(true);
            false
        } else {
            true
        }
    }
}

/// Header-aligned size the Rust allocator will really hand out for `size` bytes.
fn rounded(size: usize) -> usize {
    size.div_ceil(8).saturating_mul(8)
}

pub(crate) struct CountingAllocator {
    pub(crate) accounting: Rc<Accounting>,
}

// SAFETY: every pointer comes from, and goes back to, `RustAllocator`, which upholds the trait's
// contract; the wrapper only refuses (returns null, which the contract allows) or counts.
unsafe impl Allocator for CountingAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.accounting.admit(rounded(size), 0) {
            return std::ptr::null_mut();
        }
        let pointer = RustAllocator.alloc(size);
        if !pointer.is_null() {
            // SAFETY: `pointer` was just returned by `RustAllocator`.
            let usable = unsafe { RustAllocator::usable_size(pointer) };
            self.accounting.used.set(self.accounting.used.get() + usable);
        }
        pointer
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.accounting.admit(rounded(total), 0) {
            return std::ptr::null_mut();
        }
        let pointer = RustAllocator.calloc(count, size);
        if !pointer.is_null() {
            // SAFETY: `pointer` was just returned by `RustAllocator`.
            let usable = unsafe { RustAllocator::usable_size(pointer) };
            self.accounting.used.set(self.accounting.used.get() + usable);
        }
        pointer
    }

    unsafe fn dealloc(&mut self, pointer: *mut u8) {
        // SAFETY: the caller guarantees `pointer` came from this allocator, i.e. from
        // `RustAllocator`.
        let usable = unsafe { RustAllocator::usable_size(pointer) };
        self.accounting.used.set(self.accounting.used.get().saturating_sub(usable));
        unsafe { RustAllocator.dealloc(pointer) };
    }

    unsafe fn realloc(&mut self, pointer: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`.
        let old = unsafe { RustAllocator::usable_size(pointer) };
        if !self.accounting.admit(rounded(new_size), old) {
            return std::ptr::null_mut();
        }
        let moved = unsafe { RustAllocator.realloc(pointer, new_size) };
        if !moved.is_null() {
            let usable = unsafe { RustAllocator::usable_size(moved) };
            self.accounting.used.set(self.accounting.used.get().saturating_sub(old) + usable);
        }
        moved
    }

    unsafe fn usable_size(pointer: *mut u8) -> usize {
        // SAFETY: as for `dealloc`.
        unsafe { RustAllocator::usable_size(pointer) }
    }
}
