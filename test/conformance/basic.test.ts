// oidcc-basic-certification-test-plan (OIDCCBasicTestPlan.java): its 38 modules against one app, with the
// plan's clients (client_secret_basic, a second client_secret_basic client, a client_secret_post client) and
// ResponseMode "default" (the code in the redirect's query). The modules are in ./fixtures/basic-modules.ts,
// shared with formpost.test.ts.
import t from 'tap';
import { BASIC_MODULES, basicModules } from './fixtures/basic-modules.js';
import { setUpSuite } from './fixtures/suite.js';

const suite = await setUpSuite(t);
const registered = basicModules(t, suite, 'default');

t.test('every module of the plan has its test, named by its id', async (t) => {
  t.equal(BASIC_MODULES.length, 38);
  t.same(registered, [...BASIC_MODULES]);
});
