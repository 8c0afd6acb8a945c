//! JUnit XML for findings (audit, verify): one testcase per check.
