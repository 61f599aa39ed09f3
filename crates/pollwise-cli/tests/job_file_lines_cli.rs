//! A value a job file gives and pollwise refuses names the file and line it came from, however
//! the refusal is made (zonemode=zbd is refused where the zones are read, not where values
//! are parsed).

mod common;

use common::{pollwise, tempdir};

#[test]
fn a_refused_value_names_its_file_and_line() {
    let d = tempdir();
    let f = d.path().join("z.fio");
    std::fs::write(&f, "[j]\nioengine=sim\nsize=1M\nzonemode=zbd\n").unwrap();
    let (code, _out, err) = pollwise(&["run", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--zonemode=zbd") && err.contains("z.fio:4"),
        "{err}"
    );
    // On the command line there is no file to name.
    let (code, _out, err) = pollwise(&["run", "--ioengine=sim", "--zonemode=zbd"]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("(at "), "{err}");
}
