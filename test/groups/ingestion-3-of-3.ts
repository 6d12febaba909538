import { runTestGroup } from '../support/test-groups.js';

await runTestGroup(import.meta.url);
