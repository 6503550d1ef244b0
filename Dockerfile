# The Airflow image with the project's pinned dependencies (docker-compose.yml builds it).
FROM apache/airflow:3.3.2-python3.11
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt
# docker-compose.yml needs the image's FAB auth manager and Celery executor: fail
# the build, not the first login, if the pinned install displaced either.
RUN python -c "import airflow.providers.fab.auth_manager.fab_auth_manager, airflow.providers.celery.executors.celery_executor"
