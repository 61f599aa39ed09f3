//! fio's number expressions: the keywords `$pagesize`, `$mb_memory` and `$ncpus`, replaced by
//! this machine's figures, and a value in parentheses evaluated as arithmetic (`(512*2048)`,
//! `($mb_memory/4)M`), as fio evaluates them in a job file or on its command line.

/// `v` with fio's keywords replaced and a parenthesised expression evaluated; what follows
/// the closing parenthesis (a unit, `k`, `M`, `%`) is kept. A value without either is returned
/// as it is.
pub fn expand(v: &str) -> Result<String, String> {
    let mut s = v.to_string();
    if s.contains('$') {
        for (key, value) in [
            ("$pagesize", pollwise::sys::sysconf::page_size().to_string()),
            ("$mb_memory", mb_memory().to_string()),
            ("$ncpus", pollwise::sys::sysconf::online_cpus().to_string()),
        ] {
            s = s.replace(key, &value);
        }
    }
    let t = s.trim();
    if let Some(body) = t.strip_prefix('(') {
        let close = matching_paren(body).ok_or("its parentheses do not match")?;
        let n = Eval::new(&body[..close]).all()?;
        return Ok(format!("{n}{}", &body[close + 1..]));
    }
    Ok(s)
}

/// This machine's memory in MiB (MemTotal), as fio's `$mb_memory`.
fn mb_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib / 1024)
}

/// Where the parenthesis opened before `s` closes.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A recursive-descent evaluator of + - * / % and parentheses over whole numbers, a number
/// taking fio's 1024-based suffixes (k, m, g, t, p).
struct Eval<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Eval<'a> {
    fn new(s: &'a str) -> Eval<'a> {
        Eval {
            s: s.as_bytes(),
            at: 0,
        }
    }

    fn all(mut self) -> Result<u64, String> {
        let v = self.sum()?;
        self.space();
        if self.at != self.s.len() {
            return Err(format!(
                "unexpected '{}' in the expression",
                self.s[self.at] as char
            ));
        }
        u64::try_from(v).map_err(|_| "the expression is negative".to_string())
    }

    fn space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.space();
        self.s.get(self.at).copied()
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == b'+' { v + r } else { v - r };
            check(v)?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut v = self.atom()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.at += 1;
            let r = self.atom()?;
            v = match op {
                b'*' => v * r,
                _ if r == 0 => return Err("the expression divides by zero".into()),
                b'/' => v / r,
                _ => v % r,
            };
            check(v)?;
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let v = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("its parentheses do not match".into());
                }
                self.at += 1;
                Ok(v)
            }
            Some(b'-') => {
                self.at += 1;
                Ok(-self.atom()?)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.at;
                while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                    self.at += 1;
                }
                let digits = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("0");
                let n: i128 = digits.parse().map_err(|_| "a number is too large")?;
                let shift = match self.s.get(self.at).map(u8::to_ascii_lowercase) {
                    Some(b'k') => 10,
                    Some(b'm') => 20,
                    Some(b'g') => 30,
                    Some(b't') => 40,
                    Some(b'p') => 50,
                    _ => 0,
                };
                if shift > 0 {
                    self.at += 1;
                }
                check(n << shift)
            }
            Some(c) => Err(format!("unexpected '{}' in the expression", c as char)),
            None => Err("the expression ends early".into()),
        }
    }
}

/// `v` if it fits a size.
fn check(v: i128) -> Result<i128, String> {
    if v.unsigned_abs() > u64::MAX as u128 {
        return Err("the expression is too large".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_and_keywords_as_fio_evaluates_them() {
        assert_eq!(expand("(512*2048)").unwrap(), "1048576");
        assert_eq!(expand("(1+2)*3").unwrap(), "3*3");
        assert_eq!(expand("((1+2)*3)k").unwrap(), "9k");
        assert_eq!(expand("(4k/2)").unwrap(), "2048");
        assert_eq!(expand("4k").unwrap(), "4k");
        let page = pollwise::sys::sysconf::page_size();
        assert_eq!(expand("$pagesize").unwrap(), page.to_string());
        assert_eq!(expand("($pagesize*2)").unwrap(), (page * 2).to_string());
        assert!(expand("($mb_memory/2)M").unwrap().ends_with('M'));
        assert!(expand("(1/0)").is_err());
        assert!(expand("(1+").is_err());
        assert!(expand("(2-3)").is_err());
    }
}
