// The hosted payment page's behaviour: a countdown, status polling, copy buttons and the test-mode buttons.
// Served by the service itself; it talks to nothing but the service's own /pay endpoints.
;(() => {
  const main = document.querySelector('main.checkout')
  if (!main?.dataset.token) return
  const token = main.dataset.token
  const base = `/pay/${encodeURIComponent(token)}`
  const statusBox = document.getElementById('status')
  const announce = document.getElementById('announce')
  const countdown = document.getElementById('countdown')
  const redirectNote = document.getElementById('redirect')
  const amountLabel = document.getElementById('amount-label')
  // The server's own wording for each status, so the label here and after a reload say the same.
  const amountLabels = JSON.parse(amountLabel?.dataset.labels || '{}')
  const expiresAt = Date.parse(main.dataset.expiresAt || '')
  let final = main.dataset.status !== 'pending'
  let pollTimer = null
  let tickTimer = null

  const pad = (n) => String(n).padStart(2, '0')
  function tick() {
    const left = Math.max(0, Math.floor((expiresAt - Date.now()) / 1000))
    const h = Math.floor(left / 3600)
    const m = Math.floor((left % 3600) / 60)
    const s = left % 60
    countdown.textContent = h ? `${h}:${pad(m)}:${pad(s)}` : `${pad(m)}:${pad(s)}`
    if (left === 0 && !final) refresh()
  }

  function show(view) {
    main.dataset.status = view.status
    statusBox.className = `status status-${view.status}`
    statusBox.textContent = view.message
    if (amountLabel && amountLabels[view.status]) amountLabel.textContent = amountLabels[view.status]
    if (!view.final) return
    final = true
    clearInterval(pollTimer)
    clearInterval(tickTimer)
    countdown.parentElement.hidden = true
    for (const button of document.querySelectorAll('[data-simulate]')) button.disabled = true
    // Nothing is left to do: the instructions, the details to transfer to and the test buttons go.
    for (const part of document.querySelectorAll('.requisites, .hint, .sandbox')) part.hidden = true
    if (view.redirect_url) {
      redirectNote.hidden = false
      redirectNote.textContent = 'Taking you back to the shop…'
      const link = document.createElement('a')
      link.href = view.redirect_url
      link.textContent = 'Continue'
      redirectNote.append(' ', link)
      setTimeout(() => window.location.assign(view.redirect_url), 1500)
    }
  }

  async function refresh() {
    try {
      const res = await fetch(`${base}/status`, {
        cache: 'no-store',
        headers: { accept: 'application/json' },
      })
      if (res.ok) show(await res.json())
    } catch {
      // Offline for a moment: the next poll tries again.
    }
  }

  async function simulate(outcome, button) {
    button.disabled = true
    try {
      const res = await fetch(`${base}/simulate/${outcome}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: '{}',
      })
      if (res.ok) show(await res.json())
      else button.disabled = false
    } catch {
      button.disabled = false
    }
  }

  async function copy(button) {
    const target = document.getElementById(button.dataset.copy)
    const text = target ? target.textContent : ''
    let done = false
    try {
      await navigator.clipboard.writeText(text)
      done = true
    } catch {
      const range = document.createRange()
      range.selectNodeContents(target)
      const selection = window.getSelection()
      selection.removeAllRanges()
      selection.addRange(range)
      done = document.execCommand('copy')
    }
    button.textContent = done ? 'Copied' : 'Select and copy'
    announce.textContent = done ? 'Copied to the clipboard.' : 'Copy failed: select the text and copy it.'
    setTimeout(() => {
      button.textContent = 'Copy'
    }, 2000)
  }

  for (const button of document.querySelectorAll('[data-simulate]'))
    button.addEventListener('click', () => simulate(button.dataset.simulate, button))
  for (const button of document.querySelectorAll('[data-copy]'))
    button.addEventListener('click', () => copy(button))

  tick()
  if (!final) {
    tickTimer = setInterval(tick, 1000)
    pollTimer = setInterval(refresh, 2000)
  } else if (main.dataset.redirectUrl) {
    show({
      status: main.dataset.status,
      message: statusBox.textContent,
      final: true,
      redirect_url: main.dataset.redirectUrl,
    })
  }
})()
