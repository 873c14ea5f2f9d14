// The canvas's linter: typescript-eslint's recommended rules and the rules of hooks, over the
// app, the frame, the tests and the benches; `npm run lint` is part of scripts/test.sh.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist', 'build', 'node_modules', 'test-results', 'src/api/schema.d.ts'] },
  {
    files: ['**/*.{ts,tsx,js,mjs}'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { ecmaVersion: 2024, globals: { ...globals.browser, ...globals.node } },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      // `_name` marks what is unused on purpose (a parameter kept for its position).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The service worker: its globals, and the two constants the build puts before it.
    files: ['src/sw/**/*.js'],
    languageOptions: { globals: { ...globals.serviceworker, VERSION: 'readonly', SHELL: 'readonly' } },
  },
);
