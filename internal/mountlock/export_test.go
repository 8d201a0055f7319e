package mountlock

// HoldEnv makes the test binary a child that holds the lock of the
// directory it names until its stdin ends (TestOtherProcess; the child's
// main is in main_test.go, with TestMain).
const HoldEnv = "CCRUN_MOUNTLOCK_TEST_HOLD"
