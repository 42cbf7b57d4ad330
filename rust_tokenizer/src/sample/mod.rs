//! Sampling: the parts of data_io's sampler that run here, on tokenized folders.
//!
//! [`spans`] reads every task's span arrays into one checked table, [`philox`] is numpy's
//! `Generator(Philox)` (state in, state out), [`epoch_draw`] draws the epochs with it and writes
//! their `epoch_<n>/` arrays, [`concat`] copies every task's tokens into one `tokens.npy`, and
//! [`gather`] copies rows' byte ranges back to back (for the exports).

pub mod concat;
pub mod epoch_draw;
pub mod gather;
pub mod philox;
pub mod spans;
