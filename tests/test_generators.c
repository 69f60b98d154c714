/* Placeholder suite: replaced by the module's real tests. */
#include "testutil.h"
START_TEST(placeholder) { ck_assert_int_eq(1, 1); }
END_TEST
int main(void) { return testutil_run_single("placeholder", placeholder); }
