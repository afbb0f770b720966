/**
 * The setup page of a one-time link (#setup=TOKEN): the first owner's, printed at the platform's first
 * start, or one an owner made when adding an operator. It sets the operator's password and signs in.
 */
import { adminClient, useSession } from './admin-api.js'
import { alertBox, field, h, showError } from './dom.js'
import { setSession } from './session.js'

const MIN_PASSWORD = 12

/** The setup token of the page's address, or null when it is not a setup link. */
export function setupToken(): string | null {
  const match = /^#setup=([^&]+)$/.exec(location.hash)
  return match?.[1] ? decodeURIComponent(match[1]) : null
}

export function setupPage(main: HTMLElement, token: string, signedIn: () => Promise<void>): void {
  document.title = 'Set up your sign-in · Earshot console'
  const alert = alertBox()
  const input = (id: string, attributes: Record<string, string | boolean>) =>
    h('input', { id, name: id.replace('setup-', ''), ...attributes })
  const email = input('setup-email', {
    type: 'email',
    autocomplete: 'email',
    spellcheck: 'false',
    'aria-describedby': 'setup-email-hint',
  })
  const name = input('setup-name', { type: 'text', autocomplete: 'name', maxlength: '200' })
  const passwordAttributes = {
    type: 'password',
    autocomplete: 'new-password',
    required: true,
    minlength: String(MIN_PASSWORD),
  }
  const password = input('setup-password', {
    ...passwordAttributes,
    'aria-describedby': 'setup-password-hint',
  })
  const again = input('setup-again', passwordAttributes)
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Set up and sign in')
  const form = h(
    'form',
    {
      class: 'card narrow',
      'aria-labelledby': 'setup-heading',
      onsubmit: async (event) => {
        event.preventDefault()
        alert.replaceChildren()
        if (password.value !== again.value) {
          alert.textContent = 'The two passwords differ: type the same one twice.'
          again.focus()
          return
        }
        submit.disabled = true
        try {
          const body = {
            token,
            password: password.value,
            ...(email.value.trim() && { email: email.value.trim() }),
            ...(name.value.trim() && { name: name.value.trim() }),
          }
          const answer = await adminClient(null).call('completeSetup', { body })
          useSession(answer.csrfToken)
          setSession(answer)
          // The link is spent: its token leaves the address (and the history entry) at once.
          history.replaceState(null, '', `${location.pathname}#/overview`)
          await signedIn()
        } catch (error) {
          showError(alert, error)
        } finally {
          submit.disabled = false
        }
      },
    },
    h('h1', { id: 'setup-heading', tabindex: '-1' }, 'Set up your sign-in'),
    h(
      'p',
      {},
      'This one-time link sets your password for the console. Once set up, sign in with your email and this password.',
    ),
    h(
      'div',
      { class: 'fields stacked' },
      field(
        'setup-email',
        'Email',
        email,
        "The first owner's link needs it; a link made for an operator keeps the email it was made for.",
      ),
      field('setup-name', 'Name (optional)', name),
      field('setup-password', 'Password', password, `At least ${MIN_PASSWORD} characters.`),
      field('setup-again', 'Password again', again),
    ),
    alert,
    h('div', { class: 'actions' }, submit),
  )
  main.replaceChildren(h('div', { class: 'page sign-in' }, form))
  email.focus()
}
