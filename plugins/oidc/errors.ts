// The protocol endpoints' error rendering lives with every other error handler in
// plugins/infra/error-handlers.ts; these names stay for the modules that import them from here.
export { renderAuthorizeError, sendOAuthJson, toOAuthError, wantsJson } from '../infra/error-handlers.js';
