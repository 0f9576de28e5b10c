// What the account pages use of the self-service (issue 17): app.services.me (src/services/self-service/),
// under the names the pages' views speak of.
import type { FastifyInstance } from 'fastify';
import type { SelfService } from '../../src/services/self-service/index.js';

export type {
  MeApplication as ConnectedApplication,
  MeProfile,
  MeSession as LiveSession,
} from '../../src/services/self-service/index.js';

export const selfService = (app: FastifyInstance): SelfService => app.services.me;
