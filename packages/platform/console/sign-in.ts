/**
 * The sign-in page: an operator's email and password (a console session: its cookie is HttpOnly, its CSRF
 * token kept in memory), single sign-on when the platform offers it, and an API key (or the break-glass
 * token) for a tab of its own, kept in sessionStorage and sent as a bearer header.
 */
import { adminClient, expectSession, Refusal, storeToken, useSession } from './admin-api.js'
import { alertBox, field, h, showError } from './dom.js'
import { setSession } from './session.js'

export interface SignInOptions {
  /** Said above the forms: why the console signed out, or single sign-on's refusal. */
  message?: string | undefined
  /** Opens the API key form, focused: the tab was signed in with a key before. */
  withKey?: boolean
  /** Draws the console once signed in. */
  signedIn: () => Promise<void>
}

const SSO_START = '/admin/v1/sso/start'

export function signInPage(main: HTMLElement, options: SignInOptions): void {
  document.title = 'Sign in · Earshot console'
  const alert = alertBox()
  if (options.message) alert.textContent = options.message
  const password = passwordForm(alert, options)
  const sso = h(
    'p',
    { class: 'sso', hidden: true },
    h('a', { href: SSO_START, class: 'button', onclick: expectSession }, 'Sign in with single sign-on'),
  )
  const key = keyForm(alert, options)
  main.replaceChildren(
    h(
      'div',
      { class: 'page sign-in' },
      h(
        'div',
        { class: 'card narrow' },
        h('h1', { tabindex: '-1' }, 'Sign in'),
        alert,
        password.form,
        sso,
        key.details,
      ),
    ),
  )
  showSingleSignOn(sso)
  if (options.withKey) key.input.focus()
  else password.email.focus()
}

/** Shows the single sign-on button when the platform has it (GET /admin/v1/sso; any failure: it has not). */
async function showSingleSignOn(button: HTMLElement): Promise<void> {
  try {
    const response = await fetch('/admin/v1/sso', { credentials: 'same-origin' })
    const answer = response.ok ? ((await response.json()) as { enabled?: unknown }) : {}
    button.hidden = answer.enabled !== true
  } catch {
    button.hidden = true
  }
}

function passwordForm(alert: HTMLElement, options: SignInOptions) {
  const email = h('input', {
    id: 'sign-in-email',
    name: 'email',
    type: 'email',
    autocomplete: 'username',
    spellcheck: 'false',
    required: true,
  })
  const password = h('input', {
    id: 'sign-in-password',
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in')
  const form = h(
    'form',
    {
      'aria-label': 'Sign in with email and password',
      onsubmit: async (event) => {
        event.preventDefault()
        submit.disabled = true
        alert.replaceChildren()
        try {
          const body = { email: email.value.trim(), password: password.value }
          const answer = await adminClient(null).call('signIn', { body })
          useSession(answer.csrfToken)
          setSession(answer)
          await options.signedIn()
        } catch (error) {
          showError(alert, error)
          password.focus()
        } finally {
          submit.disabled = false
        }
      },
    },
    h(
      'div',
      { class: 'fields' },
      field('sign-in-email', 'Email', email),
      field('sign-in-password', 'Password', password),
    ),
    h('div', { class: 'actions' }, submit),
  )
  return { form, email }
}

/** The API key form: the key is checked with one read before it is kept, so a wrong one is never stored. */
function keyForm(alert: HTMLElement, options: SignInOptions) {
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'token-hint',
  })
  const submit = h('button', { type: 'submit' }, 'Sign in with the key')
  const form = h(
    'form',
    {
      'aria-label': 'Sign in with an API key',
      onsubmit: async (event) => {
        event.preventDefault()
        submit.disabled = true
        alert.replaceChildren()
        try {
          await adminClient(input.value).call('listEnterprises')
          storeToken(input.value)
          await options.signedIn()
        } catch (error) {
          if (error instanceof Refusal && error.status === 401) {
            alert.replaceChildren(
              'That key was refused. ',
              'Use an API key (earshot keys create) or the break-glass EARSHOT_ADMIN_TOKEN the platform runs with. ',
              h('span', { class: 'code' }, `The API said: ${error.msg} (${error.code})`),
            )
          } else showError(alert, error)
          input.focus()
        } finally {
          submit.disabled = false
        }
      },
    },
    field(
      'token',
      'API key',
      input,
      'An API key (esk_…) or the break-glass EARSHOT_ADMIN_TOKEN. Kept in this tab only (sessionStorage) and sent as a bearer header; never in a URL or a cookie.',
    ),
    h('div', { class: 'actions' }, submit),
  )
  const details = h(
    'details',
    { class: 'key-sign-in', open: options.withKey === true },
    h('summary', {}, 'Use an API key'),
    form,
  )
  return { details, input }
}
