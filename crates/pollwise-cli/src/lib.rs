//! The `pollwise` command's parts: fio's world on top of the pollwise library.
//!
//! The library knows nothing of the command line; everything that speaks fio lives here: the
//! options, jobs and their threads, laying out files, the scenarios and the reports. The binary
//! (`main.rs`) only dispatches; the parts are a library so the integration tests can drive them.

// Unsafe code only where a module allows it, each block with its reason (`loopdev`'s ioctl, `procsignal`'s kill).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod advise;
pub mod calibrate;
pub mod cleanup;
pub mod compare;
pub mod device;
pub mod errno;
pub mod error;
pub mod exec;
pub mod extras;
pub mod filekind;
pub mod fill;
pub mod infile;
pub mod iolog;
pub mod job;
pub mod jobs;
pub mod latency;
pub mod limits;
pub mod loopdev;
pub mod options;
pub mod outfile;
pub mod passes;
pub mod phase;
pub mod platform;
pub mod procsignal;
pub mod report;
pub mod run;
pub mod scenario;
pub mod signals;
pub mod spec;
pub mod steady;
pub mod target;
pub mod vstate;

pub use error::{Error, Result};
