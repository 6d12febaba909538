import t from 'tap';
import { PerCollectionInstances } from '../../src/collections/per-collection-instances.js';

t.test('one instance per collection, made again when its settings change or after forget', async (t) => {
  const instances = new PerCollectionInstances<{ made: number }>();
  let made = 0;
  const make = () => ({ made: ++made });
  const first = instances.get('a', 'openai|key-1', make);
  t.equal(instances.get('a', 'openai|key-1', make), first, 'same settings: the same instance');
  t.not(instances.get('b', 'openai|key-1', make), first, 'another collection: its own instance');
  const changed = instances.get('a', 'openai|key-2', make);
  t.not(changed, first, 'changed settings: a new instance');
  t.equal(instances.get('a', 'openai|key-2', make), changed, '...which replaced the old one');
  instances.forget('a');
  t.equal(instances.get('a', 'openai|key-2', make).made, 4, 'forgotten: made again');
});
