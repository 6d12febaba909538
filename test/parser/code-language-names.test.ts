/**
 * A code block's language tag, named as GitHub Linguist names it: aliases and names in any case,
 * file extensions claimed by one language only, and unknown tags kept as written (lower-cased).
 */
import t from 'tap';
import { loadCodeLanguageNames } from '../../src/parsing/code-language-names.js';

t.test('tags are named by their language, and kept as written when they differ', async (t) => {
  const namesOf = await loadCodeLanguageNames();
  const cases: Array<[string, string[], string]> = [
    ['python', ['python'], 'the name itself'],
    ['Python', ['python'], 'in any case'],
    ['py', ['python', 'py'], 'an alias'],
    ['python3', ['python', 'python3'], 'another alias'],
    ['bash', ['shell', 'bash'], 'shells are Shell'],
    ['zsh', ['shell', 'zsh'], 'shells are Shell'],
    ['js', ['javascript', 'js'], 'an alias'],
    ['cpp', ['c++', 'cpp'], 'a name that is not a word'],
    ['ps1', ['powershell', 'ps1'], 'an extension only PowerShell claims'],
    ['harbour-dsl', ['harbour-dsl'], 'an unknown tag is kept'],
  ];
  for (const [tag, names, why] of cases) t.same(namesOf(tag), names, `${tag}: ${why}`);
  t.equal(await loadCodeLanguageNames(), namesOf, 'the table is loaded once');
});
