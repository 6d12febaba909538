import t from 'tap';
import { buildTestApp } from '../support/test-app.js';
t.ok(typeof buildTestApp === 'function');
