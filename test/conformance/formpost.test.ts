// oidcc-formpost-basic-certification-test-plan (OIDCCFormPostBasicTestPlan.java): the Basic plan's 38 modules with
// ResponseMode form_post (AbstractFormPostTestPlan.changeResponseTypeToFormPost): every request carries
// response_mode=form_post, and the callback checks become AbstractOIDCCServerTest.processCallback's form_post branch
// (CheckCallbackHttpMethodIsPost, CheckCallbackContentTypeIsFormUrlEncoded, RejectAuthCodeInUrlQuery,
// RejectErrorInUrlQuery): the response arrives as the fields of the page's auto-submitted POST form.
import t from 'tap';
import { BASIC_MODULES, basicModules } from './fixtures/basic-modules.js';
import { setUpSuite } from './fixtures/suite.js';

const suite = await setUpSuite(t);
const registered = basicModules(t, suite, 'form_post');

t.test('every module of the plan has its test, named by its id', async (t) => {
  t.equal(BASIC_MODULES.length, 38);
  t.same(registered, [...BASIC_MODULES]);
});
