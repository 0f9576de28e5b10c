// Admin web pages: server-rendered, no JavaScript (progressive enhancement only), every value escaped.
// The document, fields, hidden inputs and shared style rules come from the page kit.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
// One module per area; this one gathers them for the routes.
export { ADMIN_STYLESHEET, confirmPage, type Errors, type Frame, layout } from './views-layout.js';
export {
  type ApplicationForm,
  applicationCreated,
  applicationForm,
  applicationList,
  applicationView,
  formFromApplication,
} from './views-applications.js';
export { userList, userView } from './views-users.js';
export { factorLabel, factorSection } from './views-factors.js';
export {
  formFromUpstream,
  identitySection,
  newUpstreamForm,
  type UpstreamForm,
  upstreamForm,
  upstreamList,
  upstreamView,
} from './views-upstreams.js';
export {
  type ApiForm,
  apiForm,
  apiList,
  apiView,
  formFromApi,
  type ScopeRow,
} from './views-resource-servers.js';
export { keysPage } from './views-keys.js';
export { auditPage } from './views-audit.js';
export { messagePage, setupPage } from './views-setup.js';
